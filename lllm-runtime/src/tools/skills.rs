//! Skills (`SKILL.md` folders): an index in the system prompt, bodies loaded at the tail.
#![doc = include_str!("../../../docs/skills.md")]

pub use lllm_core::skills::*;

pub use super::skill_tools::skill_tools;
