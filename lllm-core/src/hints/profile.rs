//! Server profiles and which hint each of them can send (read from each profile's [`WireShape`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::shape::{senders, shape_of, WireShape};

/// The kind of server the hints are shaped for.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Any OpenAI-compatible server: session headers only, no body field.
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
    /// NVIDIA Dynamo: `x-dynamo-*` headers and `nvext.agent_hints`.
    Dynamo,
    /// vLLM: generic session headers, `priority` (sign flipped) and `cache_salt`.
    Vllm,
    /// SGLang: generic session headers and `priority`.
    Sglang,
}

impl Profile {
    /// Every profile, in the order documentation lists them.
    pub const ALL: [Profile; 4] = [
        Profile::Dynamo,
        Profile::Vllm,
        Profile::Sglang,
        Profile::OpenAi,
    ];

    /// The profile's name as written in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::OpenAi => "openai",
            Profile::Dynamo => "dynamo",
            Profile::Vllm => "vllm",
            Profile::Sglang => "sglang",
        }
    }

    /// The table of where this profile puts each hint on the wire.
    pub fn shape(self) -> &'static WireShape {
        shape_of(self)
    }

    /// The header that carries the session id.
    pub fn session_header(self) -> &'static str {
        self.shape().session_header()
    }

    /// The header that carries the parent's session id.
    pub fn parent_header(self) -> &'static str {
        self.shape().parent_header()
    }

    /// Whether this profile can send `field`.
    pub fn sends(self, field: HintField) -> bool {
        self.shape().sends(field)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hint that only some profiles can put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintField {
    /// `priority`.
    Priority = 0,
    /// `strict_priority`.
    StrictPriority = 1,
    /// `osl`.
    Osl = 2,
    /// `speculative_prefill`.
    SpeculativePrefill = 3,
    /// `cache_salt`.
    CacheSalt = 4,
}

/// Each field's senders, computed once from the profiles' tables.
static SENDERS: [([Profile; Profile::ALL.len()], usize); HintField::ALL.len()] = [
    senders(HintField::Priority),
    senders(HintField::StrictPriority),
    senders(HintField::Osl),
    senders(HintField::SpeculativePrefill),
    senders(HintField::CacheSalt),
];

impl HintField {
    /// Every field, in the order of their discriminants (the order of each table's paths).
    pub const ALL: [HintField; 5] = [
        HintField::Priority,
        HintField::StrictPriority,
        HintField::Osl,
        HintField::SpeculativePrefill,
        HintField::CacheSalt,
    ];

    /// The field's name in YAML and Rust.
    pub fn as_str(self) -> &'static str {
        match self {
            HintField::Priority => "priority",
            HintField::StrictPriority => "strict_priority",
            HintField::Osl => "osl",
            HintField::SpeculativePrefill => "speculative_prefill",
            HintField::CacheSalt => "cache_salt",
        }
    }

    /// The profiles that can send this field, in [`Profile::ALL`] order.
    pub fn profiles(self) -> &'static [Profile] {
        let (profiles, count) = &SENDERS[self as usize];
        &profiles[..*count]
    }
}

impl fmt::Display for HintField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a forked dialog identifies itself.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ForkSession {
    /// A fork sends its own id and names its parent in the parent header.
    #[default]
    Own,
    /// Every dialog of a family sends the root dialog's id and no parent header, so a router with session
    /// affinity keeps the whole family on the worker that holds the shared prefix.
    Family,
}
