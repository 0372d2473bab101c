//! A served run's question for its caller (a tool's MCP elicitation). While one waits, the run
//! shows `requires_action` with the `question` (its message and requested schema, or its URL), and
//! `POST /v1/runs/{id}/approval` answers it: `approve` with `content` (checked against the schema:
//! a wrong field is a 400 naming it), `reject` to decline. The run keeps running meanwhile: the
//! tool call waits (bounded by the question's own limit), nothing is paused or resumed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::tools::{ElicitKind, ElicitRequest, Elicited, Form};

/// The question a run waits on, if any; one at a time (the others wait their turn).
#[derive(Debug, Default)]
pub(crate) struct Questions {
    turn: tokio::sync::Mutex<()>,
    waiting: Mutex<Option<Waiting>>,
    next: AtomicU64,
}

#[derive(Debug)]
struct Waiting {
    id: u64,
    shown: Value,
    form: Option<Form>,
    reply: oneshot::Sender<Elicited>,
}

/// How the caller answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    Approve,
    Reject,
}

/// Why an answer was not taken.
#[derive(Debug)]
pub(crate) enum NotTaken {
    /// No question waits.
    NoQuestion,
    /// The content does not fit the form: which field, and why.
    Invalid(String),
}

/// Takes the waiting question off when its asker stops waiting (answered, timed out, cancelled),
/// and tells watchers: a question withdrawn without an answer (the asker dropped) changes the
/// run's view too.
struct Asked<'a> {
    questions: &'a Questions,
    id: u64,
    changed: &'a (dyn Fn() + Sync),
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        {
            let mut waiting = self.questions.lock();
            if waiting.as_ref().is_some_and(|w| w.id == self.id) {
                *waiting = None;
            }
        }
        (self.changed)();
    }
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Waiting>> {
        // Every update is one assignment: a poisoned slot is whole.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shows `request` and waits for the caller's answer; `changed` tells watchers the run's view
    /// changed (the question shown, then gone).
    pub(crate) async fn ask(
        &self,
        request: &ElicitRequest<'_>,
        changed: &(dyn Fn() + Sync),
    ) -> Elicited {
        let _turn = self.turn.lock().await;
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (reply, answer) = oneshot::channel();
        let mut shown = json!({"id": format!("q{id}"), "type": "elicitation",
                               "source": request.source, "agent": request.agent,
                               "message": request.message});
        let form = match request.kind {
            ElicitKind::Form { form, schema } => {
                shown["requested_schema"] = schema.clone();
                Some(form.clone())
            }
            ElicitKind::Url { url } => {
                shown["url"] = url.into();
                None
            }
        };
        *self.lock() = Some(Waiting {
            id,
            shown,
            form,
            reply,
        });
        let asked = Asked {
            questions: self,
            id,
            changed,
        };
        changed();
        let answer = answer.await.unwrap_or(Elicited::Cancel);
        drop(asked);
        answer
    }

    /// The waiting question, as a run shows it.
    pub(crate) fn shown(&self) -> Option<Value> {
        self.lock().as_ref().map(|w| w.shown.clone())
    }

    /// Answers the waiting question.
    pub(crate) fn answer(&self, reply: Reply, content: Option<Value>) -> Result<(), NotTaken> {
        let mut waiting = self.lock();
        let Some(question) = waiting.as_ref() else {
            return Err(NotTaken::NoQuestion);
        };
        let answer = match (reply, &question.form) {
            (Reply::Reject, _) => Elicited::Decline,
            (Reply::Approve, Some(form)) => {
                let content = content.unwrap_or_else(|| json!({}));
                Elicited::Accept(form.check(&content).map_err(NotTaken::Invalid)?)
            }
            (Reply::Approve, None) if content.is_some() => {
                return Err(NotTaken::Invalid(
                    "`content`: the question shows a URL and takes no content".into(),
                ))
            }
            (Reply::Approve, None) => Elicited::Accept(Default::default()),
        };
        if let Some(question) = waiting.take() {
            question.reply.send(answer).ok();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_question_waits_for_valid_content() {
        let questions = Arc::new(Questions::default());
        let schema = json!({"properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let form = Form::from_schema(&schema).expect("form");
        assert!(matches!(
            questions.answer(Reply::Approve, None),
            Err(NotTaken::NoQuestion)
        ));
        let asking = {
            let questions = questions.clone();
            let (schema, form) = (schema.clone(), form.clone());
            tokio::spawn(async move {
                let request = ElicitRequest {
                    agent: "a",
                    source: "MCP server `s`",
                    message: "how many?",
                    kind: ElicitKind::Form {
                        form: &form,
                        schema: &schema,
                    },
                };
                questions.ask(&request, &|| {}).await
            })
        };
        let shown = loop {
            match questions.shown() {
                Some(shown) => break shown,
                None => tokio::task::yield_now().await,
            }
        };
        assert_eq!(shown["requested_schema"], schema);
        assert_eq!(shown["message"], "how many?");
        let Err(NotTaken::Invalid(why)) = questions.answer(Reply::Approve, Some(json!({"n": "x"})))
        else {
            panic!("invalid content taken");
        };
        assert_eq!(why, "`content.n`: must be an integer");
        assert!(questions
            .answer(Reply::Approve, Some(json!({"n": 3})))
            .is_ok());
        let answer = asking.await.expect("asked");
        let content = json!({"n": 3}).as_object().cloned().expect("map");
        assert_eq!(answer, Elicited::Accept(content));
        assert!(questions.shown().is_none());
    }

    #[tokio::test]
    async fn a_question_withdrawn_without_an_answer_tells_the_watchers() {
        use std::sync::atomic::AtomicUsize;
        let questions = Arc::new(Questions::default());
        let changes = Arc::new(AtomicUsize::new(0));
        let asking = {
            let (questions, changes) = (questions.clone(), changes.clone());
            tokio::spawn(async move {
                let request = ElicitRequest {
                    agent: "a",
                    source: "MCP server `s`",
                    message: "open this",
                    kind: ElicitKind::Url {
                        url: "https://example.invalid/",
                    },
                };
                let changed = move || {
                    changes.fetch_add(1, Ordering::SeqCst);
                };
                questions.ask(&request, &changed).await
            })
        };
        while questions.shown().is_none() {
            tokio::task::yield_now().await;
        }
        assert_eq!(changes.load(Ordering::SeqCst), 1, "shown");
        // The asker gives up (its call timed out, its run was cancelled).
        asking.abort();
        assert!(asking.await.is_err());
        assert!(questions.shown().is_none());
        assert_eq!(changes.load(Ordering::SeqCst), 2, "withdrawn");
    }
}
