//! What the hints put on the wire for one request: the session headers and the hint values, placed
//! by the profile's [`WireShape`](super::WireShape).

use serde_json::{Map, Value};

use super::{
    check_session_id, Demand, ForkSession, HintField, HintsError, InferenceHints, Priority,
    WireHints,
};
use crate::dialog::Dialog;
use crate::model_args::ModelArgs;

/// Headers and body fields for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestFields {
    /// Header names (lowercase) and values, in the order they are sent.
    pub headers: Vec<(String, String)>,
    /// JSON merged into the request body.
    pub body: Map<String, Value>,
}

impl RequestFields {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::merge::find_header(&self.headers, name)
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.body.is_empty()
    }

    /// The reference shape: `{"extra_headers": {...}, "extra_body": {...}}`, empty parts left out.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.headers.is_empty() {
            let headers: Map<String, Value> = self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            out.insert("extra_headers".into(), Value::Object(headers));
        }
        if !self.body.is_empty() {
            out.insert("extra_body".into(), Value::Object(self.body.clone()));
        }
        Value::Object(out)
    }
}

/// The session ids one request sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionIds {
    /// The session id (prefixed when a prefix is set).
    pub session_id: Option<String>,
    /// The parent's session id, for a fork.
    pub parent_session_id: Option<String>,
}

impl InferenceHints {
    fn prefixed(&self, id: &str) -> Result<String, HintsError> {
        let full = match &self.session_prefix {
            Some(prefix) => format!("{prefix}:{id}"),
            None => id.to_owned(),
        };
        check_session_id(&full)?;
        Ok(full)
    }

    /// The ids that would be sent for a dialog and its parent. With `session: false`, none.
    pub fn session_ids(
        &self,
        dialog_id: &str,
        parent_dialog_id: Option<&str>,
    ) -> Result<SessionIds, HintsError> {
        if !self.session {
            return Ok(SessionIds::default());
        }
        Ok(SessionIds {
            session_id: Some(self.prefixed(dialog_id)?),
            parent_session_id: parent_dialog_id.map(|p| self.prefixed(p)).transpose()?,
        })
    }

    /// The headers and body fields of one request for a dialog (`dialog_id`, forked from
    /// `parent_dialog_id`), with `osl` defaulting from `model_args` under the dynamo profile.
    ///
    /// Under `priority: auto` the request counts as a lone interactive one (weight 1); use
    /// [`dialog_request_fields_for`](Self::dialog_request_fields_for) to say what waits for it.
    pub fn request_fields(
        &self,
        dialog_id: Option<&str>,
        parent_dialog_id: Option<&str>,
        model_args: &ModelArgs,
    ) -> Result<RequestFields, HintsError> {
        self.request_fields_for(dialog_id, parent_dialog_id, model_args, &Demand::default())
    }

    fn request_fields_for(
        &self,
        dialog_id: Option<&str>,
        parent_dialog_id: Option<&str>,
        model_args: &ModelArgs,
        demand: &Demand,
    ) -> Result<RequestFields, HintsError> {
        let wire = self.wire_hints(model_args, demand);
        self.request_fields_with(dialog_id, parent_dialog_id, &wire)
    }

    /// The fields of one request for a dialog (`dialog_id`, forked from `parent_dialog_id`) that
    /// carries the hint values `wire` instead of the ones these hints compute: these hints' session
    /// headers, and `wire` written where the profile puts each field. Replay sends recorded values
    /// this way.
    pub fn request_fields_with(
        &self,
        dialog_id: Option<&str>,
        parent_dialog_id: Option<&str>,
        wire: &WireHints,
    ) -> Result<RequestFields, HintsError> {
        let mut fields = RequestFields::default();
        if let (None, Some(parent)) = (dialog_id, parent_dialog_id) {
            return Err(HintsError::InvalidSessionId {
                id: parent.to_owned(),
                reason: "a parent id was given without the dialog's own id",
            });
        }
        let shape = self.profile.shape();
        if let Some(id) = dialog_id {
            let ids = self.session_ids(id, parent_dialog_id)?;
            if let Some(session) = ids.session_id {
                fields
                    .headers
                    .push((shape.session_header().to_owned(), session));
            }
            if let Some(parent) = ids.parent_session_id {
                fields
                    .headers
                    .push((shape.parent_header().to_owned(), parent));
            }
        }
        shape.write(wire, &mut fields.body);
        Ok(fields)
    }

    /// [`request_fields`](Self::request_fields) for a dialog, applying [`ForkSession`]: with `family`,
    /// every dialog of a family sends its root's id and no parent.
    pub fn dialog_request_fields(
        &self,
        dialog: &Dialog,
        model_args: &ModelArgs,
    ) -> Result<RequestFields, HintsError> {
        self.dialog_request_fields_for(dialog, model_args, &Demand::default())
    }

    /// [`dialog_request_fields`](Self::dialog_request_fields) for a request that `demand` waits for:
    /// under `priority: auto` the priority fields are computed from it ([`Demand::shape`]); a
    /// written `strict_priority` wins over the computed tier. Other settings ignore `demand`.
    pub fn dialog_request_fields_for(
        &self,
        dialog: &Dialog,
        model_args: &ModelArgs,
        demand: &Demand,
    ) -> Result<RequestFields, HintsError> {
        let (id, parent) = self.identity(dialog);
        self.request_fields_for(Some(&id), parent.as_deref(), model_args, demand)
    }

    /// The `priority` (as sent, after the profile's transformation) and `strict_priority` of a
    /// request that `demand` waits for.
    pub fn priority_fields(&self, demand: &Demand) -> (Option<i64>, Option<u32>) {
        let shape = self.profile.shape();
        match self.priority {
            None => (None, self.strict_priority),
            Some(Priority::Fixed(p)) => {
                let sent = shape
                    .sends(HintField::Priority)
                    .then(|| shape.priority_to_wire(i64::from(p)));
                (sent, self.strict_priority)
            }
            Some(Priority::Auto) => {
                let auto = demand.shape(self.profile);
                (auto.priority, self.strict_priority.or(auto.strict_priority))
            }
        }
    }

    /// Every hint value one request sends with `model_args` when `demand` waits for it, as it goes
    /// on the wire: [`priority_fields`](Self::priority_fields), the `osl` sent, and the rest as
    /// configured.
    pub fn wire_hints(&self, model_args: &ModelArgs, demand: &Demand) -> WireHints {
        let (priority, strict_priority) = self.priority_fields(demand);
        WireHints {
            priority,
            strict_priority: strict_priority.map(u64::from),
            osl: self.osl_sent(model_args).map(u64::from),
            speculative_prefill: self.speculative_prefill,
            cache_salt: self.cache_salt.clone(),
        }
    }

    /// [`final_request_fields`](Self::final_request_fields) for a dialog, applying [`ForkSession`]: the
    /// session ended is the one the dialog's requests carried.
    ///
    /// The final request is routed like the dialog's turns, so it also carries what decides the
    /// route and the prefix: a fork's parent header and the `cache_salt`. Dynamo 1.6.1 keeps a
    /// fork's worker binding through its parent, and the salt is part of every cached block's hash;
    /// without them the final request (a real inference over the whole dialog) can land on a worker
    /// that holds none of it.
    pub fn dialog_final_request_fields(
        &self,
        dialog: &Dialog,
    ) -> Result<RequestFields, HintsError> {
        let (id, parent) = self.identity(dialog);
        let mut fields = self.final_request_fields(&id)?;
        let shape = self.profile.shape();
        if let Some(parent) = parent {
            fields.headers.insert(
                1,
                (shape.parent_header().to_owned(), self.prefixed(&parent)?),
            );
        }
        let salt = WireHints {
            cache_salt: self.cache_salt.clone(),
            ..WireHints::default()
        };
        shape.write(&salt, &mut fields.body);
        Ok(fields)
    }

    /// The session ids a dialog's requests carry (before the prefix): its own and its parent's, or
    /// with `family` its root's alone. A dialog named after a caller's conversation carries names.
    fn identity(&self, dialog: &Dialog) -> (String, Option<String>) {
        match self.fork_session {
            ForkSession::Own => (dialog.session(), dialog.parent_session()),
            ForkSession::Family => (dialog.root_session(), None),
        }
    }

    /// The expected output length these hints send with `model_args`: the configured `osl`, else
    /// `max_tokens` / `max_completion_tokens`, and only for a profile that sends it.
    pub(crate) fn osl_sent(&self, model_args: &ModelArgs) -> Option<u32> {
        if !self.profile.sends(HintField::Osl) {
            return None;
        }
        self.osl.or_else(|| model_args.output_limit())
    }

    /// Dynamo's end-of-session fields for a dialog:
    /// `{"extra_headers": {"x-dynamo-session-id": "<id>", "x-dynamo-session-final": "true"}}`.
    pub fn final_request_fields(&self, dialog_id: &str) -> Result<RequestFields, HintsError> {
        let shape = self.profile.shape();
        let final_header = shape.final_header().filter(|_| self.session);
        let Some(final_header) = final_header else {
            return Err(HintsError::FinalNotAvailable {
                profile: self.profile,
                session: self.session,
            });
        };
        Ok(RequestFields {
            headers: vec![
                (shape.session_header().to_owned(), self.prefixed(dialog_id)?),
                (final_header.to_owned(), "true".to_owned()),
            ],
            body: Map::new(),
        })
    }
}
