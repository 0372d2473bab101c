//! The requests an agent sends for a dialog: the dialog's messages with that dialog's hints.

use lllm_core::{Demand, Dialog};

use super::{Agent, AgentError, AgentErrorKind};
use crate::invoker::ChatRequest;

impl Agent {
    /// The request for a dialog: its messages and the hints of *that* dialog (session = its id, parent =
    /// the dialog it was forked from). What [`respond`](Self::respond) sends first, before tools.
    pub fn chat_request(&self, dialog: &Dialog) -> Result<ChatRequest, AgentError> {
        self.request_for(dialog, &Demand::of_class(self.run_class))
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
        request.profile = self.hints.as_ref().map(|h| h.profile());
        request.dialog = Some(dialog.id());
        request.parent_dialog = dialog.parent_id();
        request.window = dialog.window();
        Ok(request)
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
        args.params.remove("max_completion_tokens");
        args.params.insert("max_tokens".into(), 1.into());
        let mut request = ChatRequest::new(
            self.model.clone(),
            snapshot.messages().clone(),
            args.into(),
            hint_fields,
        );
        request.profile = Some(hints.profile());
        self.call(&request, None).await.map(drop)
    }
}
