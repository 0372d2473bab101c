//! Where each hint goes on the wire: one table per profile.
//!
//! A [`WireShape`] names a profile's session headers, the body path of every hint field it can send,
//! and how it transforms the priority. Writing hint values into a request body, reading them back
//! from a body as sent, and converting values recorded under one profile into another's all go
//! through it, so nothing else in lllm knows a header name or a body path.

use serde_json::{Map, Value};

use super::{HintField, Profile};

/// A path of object keys into a request body, such as `["nvext", "agent_hints", "priority"]`.
pub type BodyPath = &'static [&'static str];

/// How a profile sends the priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrioritySign {
    /// As given: higher is more urgent (Dynamo, SGLang).
    AsGiven,
    /// Negated, computed in `i64`: vLLM runs lower values first.
    Negated,
}

/// Where one profile puts each hint on the wire, and how it transforms the priority.
///
/// ```
/// use lllm_core::{HintField, Profile};
///
/// let vllm = Profile::Vllm.shape();
/// assert_eq!(vllm.session_header(), "x-session-id");
/// assert_eq!(vllm.path(HintField::Priority), Some(&["priority"][..]));
/// assert_eq!(vllm.priority_to_wire(5), -5);
/// assert_eq!(Profile::Dynamo.shape().path(HintField::CacheSalt), Some(&["nvext", "cache_salt"][..]));
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct WireShape {
    profile: Profile,
    session_header: &'static str,
    parent_header: &'static str,
    final_header: Option<&'static str>,
    priority_sign: PrioritySign,
    /// The body path of each [`HintField`], in [`HintField::ALL`] order; `None`: not sent.
    paths: [Option<BodyPath>; HintField::ALL.len()],
}

const DYNAMO: WireShape = WireShape {
    profile: Profile::Dynamo,
    session_header: "x-dynamo-session-id",
    parent_header: "x-dynamo-parent-session-id",
    final_header: Some("x-dynamo-session-final"),
    priority_sign: PrioritySign::AsGiven,
    paths: [
        Some(&["nvext", "agent_hints", "priority"]),
        Some(&["nvext", "agent_hints", "strict_priority"]),
        Some(&["nvext", "agent_hints", "osl"]),
        Some(&["nvext", "agent_hints", "speculative_prefill"]),
        Some(&["nvext", "cache_salt"]),
    ],
};

const VLLM: WireShape = WireShape {
    profile: Profile::Vllm,
    session_header: "x-session-id",
    parent_header: "x-parent-session-id",
    final_header: None,
    priority_sign: PrioritySign::Negated,
    paths: [Some(&["priority"]), None, None, None, Some(&["cache_salt"])],
};

const SGLANG: WireShape = WireShape {
    profile: Profile::Sglang,
    session_header: "x-session-id",
    parent_header: "x-parent-session-id",
    final_header: None,
    priority_sign: PrioritySign::AsGiven,
    paths: [Some(&["priority"]), None, None, None, None],
};

const OPENAI: WireShape = WireShape {
    profile: Profile::OpenAi,
    session_header: "x-session-id",
    parent_header: "x-parent-session-id",
    final_header: None,
    priority_sign: PrioritySign::AsGiven,
    paths: [None; HintField::ALL.len()],
};

/// The table of `profile`.
pub(super) const fn shape_of(profile: Profile) -> &'static WireShape {
    match profile {
        Profile::Dynamo => &DYNAMO,
        Profile::Vllm => &VLLM,
        Profile::Sglang => &SGLANG,
        Profile::OpenAi => &OPENAI,
    }
}

/// The profiles whose table has a path for `field`, in [`Profile::ALL`] order, and how many.
pub(super) const fn senders(field: HintField) -> ([Profile; Profile::ALL.len()], usize) {
    let mut out = [Profile::OpenAi; Profile::ALL.len()];
    let (mut n, mut i) = (0, 0);
    while i < Profile::ALL.len() {
        let profile = Profile::ALL[i];
        if shape_of(profile).paths[field as usize].is_some() {
            out[n] = profile;
            n += 1;
        }
        i += 1;
    }
    (out, n)
}

/// Hint values by what they mean: `priority` higher is more urgent, whatever the profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HintValues {
    /// The priority; higher is more urgent.
    pub priority: Option<i64>,
    /// Dynamo's router queue tier.
    pub strict_priority: Option<u64>,
    /// Expected output tokens.
    pub osl: Option<u64>,
    /// Whether to prefill the predicted next turn.
    pub speculative_prefill: Option<bool>,
    /// The prefix-cache salt.
    pub cache_salt: Option<String>,
}

/// Hint values as one profile puts them on the wire: `priority` after the profile's transformation
/// (negated for vLLM). Convert between profiles with [`WireShape::reshape`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireHints {
    /// The priority as sent.
    pub priority: Option<i64>,
    /// Dynamo's router queue tier, as sent.
    pub strict_priority: Option<u64>,
    /// Expected output tokens, as sent.
    pub osl: Option<u64>,
    /// `speculative_prefill`, as sent.
    pub speculative_prefill: Option<bool>,
    /// The prefix-cache salt, as sent.
    pub cache_salt: Option<String>,
}

impl WireHints {
    /// These values, and `defaults`' where these have none.
    pub fn or(self, defaults: WireHints) -> WireHints {
        WireHints {
            priority: self.priority.or(defaults.priority),
            strict_priority: self.strict_priority.or(defaults.strict_priority),
            osl: self.osl.or(defaults.osl),
            speculative_prefill: self.speculative_prefill.or(defaults.speculative_prefill),
            cache_salt: self.cache_salt.or(defaults.cache_salt),
        }
    }

    fn value(&self, field: HintField) -> Option<Value> {
        match field {
            HintField::Priority => self.priority.map(Value::from),
            HintField::StrictPriority => self.strict_priority.map(Value::from),
            HintField::Osl => self.osl.map(Value::from),
            HintField::SpeculativePrefill => self.speculative_prefill.map(Value::from),
            HintField::CacheSalt => self.cache_salt.as_deref().map(Value::from),
        }
    }

    /// Sets `field` from a body's `value`; a value of the wrong type counts as not sent.
    fn set(&mut self, field: HintField, value: &Value) {
        match field {
            HintField::Priority => self.priority = value.as_i64(),
            HintField::StrictPriority => self.strict_priority = value.as_u64(),
            HintField::Osl => self.osl = value.as_u64(),
            HintField::SpeculativePrefill => self.speculative_prefill = value.as_bool(),
            HintField::CacheSalt => self.cache_salt = value.as_str().map(str::to_owned),
        }
    }

    fn clear(&mut self, field: HintField) {
        match field {
            HintField::Priority => self.priority = None,
            HintField::StrictPriority => self.strict_priority = None,
            HintField::Osl => self.osl = None,
            HintField::SpeculativePrefill => self.speculative_prefill = None,
            HintField::CacheSalt => self.cache_salt = None,
        }
    }

    /// The values of whichever profile's shape a body has, for a body sent by an unknown profile:
    /// for each field, the first profile in [`Profile::ALL`] order whose path holds something.
    pub fn read_any<'a>(lookup: impl Fn(BodyPath) -> Option<&'a Value>) -> WireHints {
        let mut wire = WireHints::default();
        for field in HintField::ALL {
            let found = Profile::ALL
                .iter()
                .filter_map(|p| p.shape().path(field))
                .find_map(&lookup);
            if let Some(value) = found {
                wire.set(field, value);
            }
        }
        wire
    }
}

impl WireShape {
    /// The profile this table is of.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The header that carries the session id.
    pub fn session_header(&self) -> &'static str {
        self.session_header
    }

    /// The header that carries the parent's session id.
    pub fn parent_header(&self) -> &'static str {
        self.parent_header
    }

    /// The header that ends a session (`true`), for a profile that has one (Dynamo).
    pub fn final_header(&self) -> Option<&'static str> {
        self.final_header
    }

    /// How the priority is sent.
    pub fn priority_sign(&self) -> PrioritySign {
        self.priority_sign
    }

    /// Where `field` goes in the body, or `None` when this profile cannot send it.
    pub fn path(&self, field: HintField) -> Option<BodyPath> {
        self.paths[field as usize]
    }

    /// Whether this profile can send `field`.
    pub fn sends(&self, field: HintField) -> bool {
        self.path(field).is_some()
    }

    /// A priority (higher is more urgent) as this profile sends it. Negation saturates, so
    /// `i64::MIN` becomes `i64::MAX`; a priority from an `i32` never comes near.
    pub fn priority_to_wire(&self, priority: i64) -> i64 {
        match self.priority_sign {
            PrioritySign::AsGiven => priority,
            PrioritySign::Negated => priority.saturating_neg(),
        }
    }

    /// A priority as this profile sent it, as a priority where higher is more urgent.
    pub fn priority_from_wire(&self, sent: i64) -> i64 {
        // Both signs are their own inverse.
        self.priority_to_wire(sent)
    }

    /// `values` as this profile sends them: the priority transformed, fields it cannot send left
    /// out.
    pub fn to_wire(&self, values: &HintValues) -> WireHints {
        let sent = |field: HintField| self.sends(field);
        WireHints {
            priority: values
                .priority
                .filter(|_| sent(HintField::Priority))
                .map(|p| self.priority_to_wire(p)),
            strict_priority: values
                .strict_priority
                .filter(|_| sent(HintField::StrictPriority)),
            osl: values.osl.filter(|_| sent(HintField::Osl)),
            speculative_prefill: values
                .speculative_prefill
                .filter(|_| sent(HintField::SpeculativePrefill)),
            cache_salt: values
                .cache_salt
                .clone()
                .filter(|_| sent(HintField::CacheSalt)),
        }
    }

    /// What values sent by this profile mean.
    pub fn from_wire(&self, wire: &WireHints) -> HintValues {
        HintValues {
            priority: wire.priority.map(|p| self.priority_from_wire(p)),
            strict_priority: wire.strict_priority,
            osl: wire.osl,
            speculative_prefill: wire.speculative_prefill,
            cache_salt: wire.cache_salt.clone(),
        }
    }

    /// Values recorded as `recorded_with` sent them, as this profile sends them: unchanged when the
    /// profiles are the same or the recording's is unknown (then the values are taken as they
    /// are), converted through what they mean otherwise. Fields this profile cannot send are left
    /// out either way.
    pub fn reshape(&self, recorded: &WireHints, recorded_with: Option<Profile>) -> WireHints {
        match recorded_with {
            Some(profile) if profile != self.profile => {
                self.to_wire(&profile.shape().from_wire(recorded))
            }
            // To the same profile, `to_wire` of `from_wire` is the identity, without a round trip.
            _ => {
                let mut kept = recorded.clone();
                for field in HintField::ALL {
                    if !self.sends(field) {
                        kept.clear(field);
                    }
                }
                kept
            }
        }
    }

    /// Writes `wire` into `body` where this profile puts each field, creating the objects on the
    /// way; a field this profile cannot send is not written, and nothing is written for an unset
    /// one (no `null`s, no empty objects).
    pub fn write(&self, wire: &WireHints, body: &mut Map<String, Value>) {
        for field in HintField::ALL {
            if let (Some(path), Some(value)) = (self.path(field), wire.value(field)) {
                insert_at(body, path, value);
            }
        }
    }

    /// The values `body` carries where this profile puts them.
    pub fn read_body(&self, body: &Map<String, Value>) -> WireHints {
        self.read(|path| lookup_in(body, path))
    }

    /// The values a body carries where this profile puts them, `lookup` giving the value at a path
    /// (a body not yet merged can be read where it will be, without merging it).
    pub fn read<'a>(&self, lookup: impl Fn(BodyPath) -> Option<&'a Value>) -> WireHints {
        let mut wire = WireHints::default();
        for field in HintField::ALL {
            if let Some(value) = self.path(field).and_then(&lookup) {
                wire.set(field, value);
            }
        }
        wire
    }
}

/// The value at `path` in `body`.
pub(crate) fn lookup_in<'a>(body: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut object = body;
    for key in parents {
        object = object.get(*key)?.as_object()?;
    }
    object.get(*last)
}

/// Puts `value` at `path`, making the objects on the way (replacing what is not an object there).
fn insert_at(body: &mut Map<String, Value>, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut object = body;
    for key in parents {
        let slot = object
            .entry(*key)
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(inner) = slot else {
            return;
        };
        object = inner;
    }
    object.insert((*last).to_owned(), value);
}
