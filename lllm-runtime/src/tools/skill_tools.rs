//! `load_skill` and `read_skill_file`: the tools an agent with skills is offered. Their results
//! arrive at the tail of the dialog, so loading a skill never changes the cached prefix.

use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::skills::{SkillSet, LOAD_SKILL, READ_SKILL_FILE};
use lllm_core::ToolSpec;
use serde_json::{json, Value};

use super::{Tool, ToolError, ToolOutput};

/// The two tools an agent with `skills` is offered, `load_skill` and `read_skill_file`, as its
/// model sees them (the agent builder adds them itself; `lllm tools` lists them).
pub fn skill_tools(skills: &Arc<SkillSet>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SkillTool {
            spec: load_spec(),
            skills: skills.clone(),
            reads_file: false,
        }),
        Arc::new(SkillTool {
            spec: read_spec(),
            skills: skills.clone(),
            reads_file: true,
        }),
    ]
}

fn load_spec() -> ToolSpec {
    ToolSpec {
        name: LOAD_SKILL.to_owned(),
        description: "Loads a skill listed under `# Skills`: returns its instructions, to follow for the task at hand.".to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name, as the list shows it."}},
            "required": ["name"],
            "additionalProperties": false
        }),
    }
}

fn read_spec() -> ToolSpec {
    ToolSpec {
        name: READ_SKILL_FILE.to_owned(),
        description: "Reads a file of a skill (one its instructions mention), by a path relative to the skill's folder.".to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name."},
                "path": {"type": "string", "description": "The file's path inside the skill's folder, such as `template.md`."}
            },
            "required": ["name", "path"],
            "additionalProperties": false
        }),
    }
}

/// One of the skill tools: reads the skills loaded at build time (the same bodies for the whole
/// run), never anything outside their folders.
#[derive(Debug)]
struct SkillTool {
    spec: ToolSpec,
    skills: Arc<SkillSet>,
    reads_file: bool,
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let name = text("name");
        if self.reads_file {
            return self
                .skills
                .read_file(name, text("path"))
                .map(ToolOutput::Text)
                .map_err(ToolError::new);
        }
        match self.skills.get(name) {
            Some(skill) => Ok(ToolOutput::Text(skill.body().to_owned())),
            None => Err(ToolError::new(self.skills.unknown(name))),
        }
    }

    fn idempotent(&self) -> bool {
        // They only read files loaded or checked at build time.
        true
    }

    fn source(&self) -> String {
        "the agent's skills".to_owned()
    }
}
