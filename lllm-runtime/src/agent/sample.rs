//! Completions a tool asks for during its call (an MCP server's sampling), answered by the agent's
//! model as a child dialog of the calling dialog, through the agent's layers.

use async_trait::async_trait;
use lllm_core::{Demand, Dialog, Message, ModelArgs};
use serde_json::Value;

use super::{Agent, AgentErrorKind};
use crate::events::{cut, RunEvent, MAX_LABEL};
use crate::tools::{
    ElicitRequest, Elicited, SampleAnswer, SampleError, SampleRequest, Sampler, ToolProgress,
};

/// Most characters of a task's message in a run's events.
const MAX_PROGRESS_CHARS: usize = 500;

/// Most stop sequences taken from a server, and most characters of each.
const MAX_STOPS: usize = 4;
const MAX_STOP_CHARS: usize = 64;

/// The agent answering for one calling dialog (a snapshot of the respond's working copy).
pub(super) struct DialogSampler<'a> {
    pub(super) agent: &'a Agent,
    pub(super) calling: Dialog,
    pub(super) demand: Demand,
}

#[async_trait]
impl Sampler for DialogSampler<'_> {
    async fn sample(&self, request: SampleRequest) -> Result<SampleAnswer, SampleError> {
        let child = self.child(&request).map_err(refused)?;
        let mut chat = self
            .agent
            .request_for(&child, &self.demand)
            .map_err(refused)?;
        chat.model_args = bounded_args(&self.agent.model_args, &request).into();
        // A sample is a question of its own: the agent's tools are not offered.
        let response = self.agent.call(&chat, None).await.map_err(refused)?;
        let message = response.message;
        Ok(SampleAnswer {
            truncated: message.finish_reason.as_deref() == Some("length"),
            text: message.text().to_owned(),
            model: self.agent.model.clone(),
        })
    }

    fn progress(&self, call_id: &str, progress: ToolProgress<'_>) {
        let Some(observer) = &self.agent.run.observer else {
            return;
        };
        observer.notify(&RunEvent::ToolProgress {
            agent: self.agent.name.clone(),
            call_id: call_id.to_owned(),
            tool: cut(progress.tool, MAX_LABEL),
            status: cut(progress.status, MAX_LABEL),
            message: progress.message.map(|m| cut(m, MAX_PROGRESS_CHARS)),
        });
    }

    async fn elicit(&self, request: ElicitRequest<'_>) -> Elicited {
        let Some(confirm) = &self.agent.run.confirm else {
            return Elicited::Decline;
        };
        let request = ElicitRequest {
            agent: &self.agent.name,
            ..request
        };
        confirm.elicit(request).await
    }
}

impl DialogSampler<'_> {
    /// The child dialog: the server's messages alone (after its system prompt), or a fork of the
    /// calling dialog with them appended. Its id comes from the journal, so that a resumed run asks
    /// the same dialog's journaled answer back instead of the model.
    fn child(&self, request: &SampleRequest) -> Result<Dialog, AgentErrorKind> {
        let mut child = if request.include_context {
            let mut calling = self.calling.clone();
            let mut fork = calling.fork();
            if let Some(system) = &request.system {
                fork.push(Message::user(format!("(instructions) {system}")));
            }
            fork
        } else {
            self.calling
                .child(request.system.iter().map(|s| Message::system(s.clone())))
        };
        for message in &request.messages {
            child.push(message.clone());
        }
        let Some(journal) = &self.agent.run.journal else {
            return Ok(child);
        };
        let alias = format!("sampling:{}", self.calling.id());
        let id = journal
            .dialog_id(&self.agent.name, &alias, child.id())
            .map_err(AgentErrorKind::Journal)?;
        Ok(child.with_id(id))
    }
}

/// The agent's arguments with what the server asks, within the agent's bounds: the smaller of the
/// two token limits; the server's temperature and stop sequences only where the agent sets none.
fn bounded_args(args: &ModelArgs, request: &SampleRequest) -> ModelArgs {
    let mut args = args.clone();
    let params = &mut args.endpoint.params;
    let key = if params.contains_key("max_completion_tokens") {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    let own = params.get(key).and_then(Value::as_u64);
    let limit = own.map_or(u64::from(request.max_tokens), |own| {
        own.min(u64::from(request.max_tokens))
    });
    params.insert(key.into(), limit.max(1).into());
    if let Some(t) = request.temperature.filter(|t| t.is_finite()) {
        if !params.contains_key("temperature") {
            params.insert("temperature".into(), f64::from(t.clamp(0.0, 2.0)).into());
        }
    }
    if !request.stop.is_empty() && !params.contains_key("stop") {
        let stops: Vec<Value> = request
            .stop
            .iter()
            .take(MAX_STOPS)
            .map(|s| s.chars().take(MAX_STOP_CHARS).collect::<String>().into())
            .collect();
        params.insert("stop".into(), stops.into());
    }
    args
}

/// Why a sample was not answered, for the server; whether the run cannot go on.
fn refused(kind: AgentErrorKind) -> SampleError {
    let stops_run = matches!(
        kind,
        AgentErrorKind::Limit { .. } | AgentErrorKind::Journal(_) | AgentErrorKind::Paused { .. }
    );
    SampleError {
        message: format!("the client's model did not answer: {kind}"),
        stops_run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_token_limit_is_held_to_the_agents() {
        let mut args = ModelArgs::default();
        args.endpoint.params.insert("max_tokens".into(), 50.into());
        args.endpoint
            .params
            .insert("temperature".into(), 0.1.into());
        let request = SampleRequest {
            max_tokens: 500,
            temperature: Some(0.9),
            stop: vec!["x".repeat(100); 9],
            ..SampleRequest::default()
        };
        let bounded = bounded_args(&args, &request);
        let params = &bounded.endpoint.params;
        assert_eq!(params["max_tokens"], 50);
        assert_eq!(params["temperature"], 0.1);
        let stops = params["stop"].as_array().expect("stops");
        assert_eq!(stops.len(), MAX_STOPS);
        assert_eq!(stops[0].as_str().map(str::len), Some(MAX_STOP_CHARS));
        let free = bounded_args(&ModelArgs::default(), &request);
        assert_eq!(free.endpoint.params["max_tokens"], 500);
        assert!(
            (free.endpoint.params["temperature"]
                .as_f64()
                .expect("temperature")
                - 0.9)
                .abs()
                < 1e-6
        );
    }
}
