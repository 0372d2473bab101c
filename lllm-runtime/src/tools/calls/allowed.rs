//! A loaded skill's `allowed-tools`, as a tool-call layer: enforced at the call, never by changing
//! the tools offered (which would throw the cached prefix away).

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::skills::{SkillSet, LOAD_SKILL, READ_SKILL_FILE};

use super::{CallTool, PreparedCall, Reply, ToolCallError};

/// While a skill that sets `allowed-tools` is loaded in the calling dialog, a call of a tool it does
/// not list is answered `not allowed: ...` and does not run. With several such skills loaded, a call
/// must be allowed by each. The skill tools stay allowed (a skill may always be read).
#[derive(Debug)]
pub(crate) struct Allowed<L> {
    inner: L,
    /// The agent's skills (none: every call goes through).
    skills: Option<Arc<SkillSet>>,
}

impl<L> Allowed<L> {
    pub(crate) fn new(inner: L, skills: Option<Arc<SkillSet>>) -> Self {
        Allowed { inner, skills }
    }
}

#[async_trait]
impl<L: CallTool> CallTool for Allowed<L> {
    async fn call(&self, call: PreparedCall<'_>) -> Result<Reply, ToolCallError> {
        if let Some(problem) = self.refusal(&call) {
            return Ok(Err(problem));
        }
        self.inner.call(call).await
    }
}

impl<L> Allowed<L> {
    /// Why `call` may not run, when a loaded skill forbids it.
    fn refusal(&self, call: &PreparedCall<'_>) -> Option<String> {
        let skills = self.skills.as_ref()?;
        let tool = call.call.name.as_str();
        if tool == LOAD_SKILL || tool == READ_SKILL_FILE {
            return None;
        }
        let forbidding = call
            .loaded_skills
            .iter()
            .filter_map(|name| skills.get(name))
            .find(|skill| !skill.allows(tool))?;
        let allowed = forbidding.allowed_tools().unwrap_or_default().join(", ");
        Some(format!(
            "not allowed: the loaded skill `{}` allows only these tools: {allowed} (and {LOAD_SKILL}, {READ_SKILL_FILE}); `{tool}` was not run",
            forbidding.name()
        ))
    }
}
