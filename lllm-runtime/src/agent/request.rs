//! The requests an agent sends for a dialog: the dialog's messages with that dialog's hints.

use lllm_core::{Demand, Dialog, RequestFields};

use super::{Agent, AgentError, AgentErrorKind};
use crate::invoker::{ChatRequest, Urgency};

impl Agent {
    /// The request for a dialog: its messages and the hints of *that* dialog (session = its id, parent =
    /// the dialog it was forked from). What [`respond`](Self::respond) sends first, before tools.
    pub fn chat_request(&self, dialog: &Dialog) -> Result<ChatRequest, AgentError> {
        self.request_for(dialog, &Demand::of_class(self.run.class))
            .map_err(|kind| self.error(None, kind))
    }

    /// The request for a dialog whose answer `demand` waits for (used by `priority: auto`).
    pub(super) fn request_for(
        &self,
        dialog: &Dialog,
        demand: &Demand,
    ) -> Result<ChatRequest, AgentErrorKind> {
        let hint_fields = match &self.hints {
            Some(hints) => hints
                .dialog_request_fields_for(dialog, &self.model_args, demand)
                .map_err(AgentErrorKind::Hints)?,
            None => Default::default(),
        };
        let mut request = ChatRequest::new(
            self.model.clone(),
            dialog.messages().clone(),
            self.model_args.clone(),
            hint_fields,
        );
        request.notes.profile = self.hints.as_ref().map(|h| h.profile());
        request.notes.dialog = Some(dialog.id());
        request.notes.parent_dialog = dialog.parent_id();
        request.notes.window = dialog.window();
        request.notes.urgency = self.urgency(demand);
        request.notes.fallback_hints = self.fallback_hints(dialog, demand)?;
        Ok(request)
    }

    /// How urgent a request is when it waits for a slot: under `priority: auto`, the run's class
    /// and the computed weight; else the written priority (and `strict_priority` as the tier).
    fn urgency(&self, demand: &Demand) -> Urgency {
        let Some(hints) = &self.hints else {
            return Urgency::default();
        };
        if hints.priority_is_auto() {
            return Urgency {
                tier: demand.class.tier(),
                priority: i64::from(demand.weight()),
            };
        }
        Urgency {
            tier: hints.strict_priority().unwrap_or(0),
            priority: hints.priority().map_or(0, i64::from),
        }
    }

    /// The hint fields for each fallback endpoint: the same dialog's hints as that endpoint
    /// carries them (computed once, when the agent was built) with its arguments (none without
    /// hints). Never built again through the hints' builder, which refuses what another profile
    /// cannot send: the wire table leaves it out.
    fn fallback_hints(
        &self,
        dialog: &Dialog,
        demand: &Demand,
    ) -> Result<Vec<RequestFields>, AgentErrorKind> {
        self.model_args
            .fallback
            .iter()
            .zip(self.fallback_hints.iter())
            .map(|(entry, carried)| {
                let args = entry.endpoint_over(&self.model_args.endpoint).into();
                carried
                    .hints()
                    .dialog_request_fields_for(dialog, &args, demand)
                    .map_err(AgentErrorKind::Hints)
            })
            .collect()
    }

    /// Sends Dynamo's end-of-session request for dialog `alias` (opt-in; never sent by [`close`]).
    ///
    /// On stock Dynamo this is a real, one-token inference over the dialog's messages, carrying
    /// `x-dynamo-session-final: true`; its answer is not added to the dialog. Needs the `dynamo` profile.
    ///
    /// [`close`]: Agent::close
    pub async fn finish(&self, alias: &str) -> Result<(), AgentError> {
        self.finish_in(alias)
            .await
            .map_err(|kind| self.error(Some(alias), kind))
    }

    async fn finish_in(&self, alias: &str) -> Result<(), AgentErrorKind> {
        let hints = self.hints.as_ref().ok_or(AgentErrorKind::NoHints)?;
        let (snapshot, _busy) = self.begin(alias)?;
        let hint_fields = hints
            .dialog_final_request_fields(&snapshot)
            .map_err(AgentErrorKind::Hints)?;
        let mut args = (*self.model_args).clone();
        args.endpoint.params.remove("max_completion_tokens");
        args.endpoint.params.insert("max_tokens".into(), 1.into());
        let mut request = ChatRequest::new(
            self.model.clone(),
            snapshot.messages().clone(),
            args.into(),
            hint_fields,
        );
        request.notes.profile = Some(hints.profile());
        self.call(&request, None).await.map(drop)
    }
}
