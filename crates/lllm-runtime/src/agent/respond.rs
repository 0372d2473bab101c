//! Answering a dialog: one model call with the dialog's hints, retried where that may help.

use std::time::Duration;

use lllm_core::{Dialog, DialogId, Message};

use super::{Agent, AgentError};
use crate::invoker::{ChatRequest, ChatResponse, InvokeError, DEFAULT_TIMEOUT};

/// Marks a dialog as waiting for an answer, and clears the mark however the respond ends: success,
/// error, or its future being dropped (cancellation).
struct BusyGuard<'a> {
    agent: &'a Agent,
    dialog: DialogId,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        // By id, not alias: the dialog may have been closed and its alias reused meanwhile.
        let mut table = self.agent.table();
        if let Some(slot) = table
            .slots
            .iter_mut()
            .find(|s| s.dialog.id() == self.dialog)
        {
            slot.busy = false;
        }
    }
}

impl Agent {
    /// Answers the active dialog and appends the answer to it.
    ///
    /// On failure (server error after retries, timeout) or cancellation the dialog is left exactly as it
    /// was: the received message stays, nothing is appended.
    pub async fn respond(&self) -> Result<Message, AgentError> {
        let alias = self.active_alias_in(&self.table())?;
        self.respond_in(&alias).await
    }

    /// Answers dialog `alias` (active or not) and appends the answer to it.
    pub async fn respond_in(&self, alias: &str) -> Result<Message, AgentError> {
        let (snapshot, _busy) = self.begin(alias)?;
        let request = self.chat_request(&snapshot)?;
        let response = self.call_with_retries(alias, &request).await?;
        self.append(alias, &snapshot, response.message)
    }

    /// Sends Dynamo's end-of-session request for dialog `alias` (opt-in; never sent by [`close`]).
    ///
    /// On stock Dynamo this is a real, one-token inference over the dialog's messages, carrying
    /// `x-dynamo-session-final: true`; its answer is not added to the dialog. Needs the `dynamo` profile.
    ///
    /// [`close`]: Agent::close
    pub async fn finish(&self, alias: &str) -> Result<(), AgentError> {
        let hints = self
            .hints
            .as_ref()
            .ok_or_else(|| AgentError::NoHints(self.name.clone()))?;
        let (snapshot, _busy) = self.begin(alias)?;
        let hint_fields = hints
            .dialog_final_request_fields(&snapshot)
            .map_err(|e| self.hints_error(e))?;
        let mut args = (*self.model_args).clone();
        args.params.remove("max_completion_tokens");
        args.params.insert("max_tokens".into(), 1.into());
        let request = ChatRequest {
            model: self.model.clone(),
            messages: snapshot.messages().clone(),
            model_args: args.into(),
            hint_fields,
        };
        self.call_with_retries(alias, &request).await.map(drop)
    }

    /// Marks `alias` busy and takes an O(1) snapshot of it.
    fn begin(&self, alias: &str) -> Result<(Dialog, BusyGuard<'_>), AgentError> {
        let mut table = self.table();
        let index = table
            .position(alias)
            .ok_or_else(|| self.unknown(&table, alias))?;
        let slot = &mut table.slots[index];
        if slot.busy {
            return Err(AgentError::DialogBusy {
                agent: self.name.clone(),
                alias: alias.to_owned(),
            });
        }
        slot.busy = true;
        let snapshot = slot.dialog.snapshot();
        let guard = BusyGuard {
            agent: self,
            dialog: snapshot.id(),
        };
        Ok((snapshot, guard))
    }

    fn hints_error(&self, source: lllm_core::HintsError) -> AgentError {
        AgentError::Hints {
            agent: self.name.clone(),
            source,
        }
    }

    /// The request for a dialog: its messages and the hints of *that* dialog (session = its id, parent =
    /// the dialog it was forked from).
    pub fn chat_request(&self, dialog: &Dialog) -> Result<ChatRequest, AgentError> {
        let hint_fields = match &self.hints {
            Some(hints) => hints
                .dialog_request_fields(dialog, &self.model_args)
                .map_err(|e| self.hints_error(e))?,
            None => Default::default(),
        };
        Ok(ChatRequest {
            model: self.model.clone(),
            messages: dialog.messages().clone(),
            model_args: self.model_args.clone(),
            hint_fields,
        })
    }

    async fn call_with_retries(
        &self,
        alias: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, AgentError> {
        let timeout = self.model_args.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let mut retry = 0;
        loop {
            let error = match tokio::time::timeout(timeout, self.invoker.invoke(request)).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(error)) => error,
                Err(_) => InvokeError::Timeout(timeout),
            };
            match self.retry.delay(retry, &error) {
                Some(wait) => {
                    tracing::warn!(
                        agent = %self.name,
                        dialog = alias,
                        attempt = retry + 1,
                        wait_ms = duration_ms(wait),
                        error = %error,
                        "model call failed; retrying"
                    );
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                None => {
                    return Err(AgentError::Invoke {
                        agent: self.name.clone(),
                        alias: alias.to_owned(),
                        attempts: retry + 1,
                        source: error,
                    })
                }
            }
        }
    }

    /// Appends the answer, unless the dialog was closed (or replaced) while the call was under way.
    fn append(&self, alias: &str, asked: &Dialog, answer: Message) -> Result<Message, AgentError> {
        let mut table = self.table();
        let slot = table
            .position(alias)
            .map(|i| &mut table.slots[i])
            .filter(|s| s.dialog.id() == asked.id())
            .ok_or_else(|| AgentError::DialogClosed {
                agent: self.name.clone(),
                alias: alias.to_owned(),
            })?;
        slot.dialog.push(answer.clone());
        Ok(answer)
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
