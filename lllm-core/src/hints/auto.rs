//! `priority: auto`: the priority of each request computed from what waits for its answer.

use serde::{Deserialize, Serialize};

use super::{HintField, Profile};

/// The highest weight sent; a larger count is sent as this.
pub const MAX_WEIGHT: u32 = 999;
/// How far apart the tiers are in a single `priority` number (vLLM, SGLang).
const TIER_SPAN: i64 = 1000;

/// A priority as written: a number, or `auto`.
///
/// `auto` follows one rule (the hints guide says the same): a request's *weight* is 1, plus the
/// turns of the run that cannot start until its answer arrives (the later turns of its own branch,
/// the forks that will start from its dialog, every turn after its parallel group), plus the
/// branches of its parallel groups that have already finished and whose answers now wait for it (so
/// the last branch still running carries the most). A run is `interactive` (`lllm run`, the default)
/// or `batch` (`lllm batch`, unless configured); every interactive request ranks above every batch
/// request, whatever the weights. Each profile gets this in the form its scheduler acts on:
///
/// | profile | sent |
/// |---|---|
/// | `dynamo` | `strict_priority`: 1 for interactive (a router queue tier above untagged traffic), none for batch; `priority`: the weight, which the router's default `fcfs` queue policy reads as seconds of head start |
/// | `vllm` | `priority`: −(1000 × tier + weight), since vLLM runs lower values first |
/// | `sglang` | `priority`: 1000 × tier + weight |
///
/// The weight is capped at [`MAX_WEIGHT`], so a tier always outranks any weight.
///
/// ```
/// use lllm_core::{Demand, Dialog, InferenceHints, ModelArgs, Priority, Profile, RunClass};
///
/// let hints = InferenceHints::builder()
///     .profile(Profile::Dynamo)
///     .priority(Priority::Auto)
///     .build()
///     .expect("dynamo takes priority");
/// // The lead's turn of a fan-out: three forks and a join wait for it.
/// let lead = Demand { waiting_turns: 4, waiting_branches: 0, class: RunClass::Interactive };
/// let fields = hints
///     .dialog_request_fields_for(&Dialog::new(), &ModelArgs::new(), &lead)
///     .expect("fields");
/// assert_eq!(
///     fields.to_json()["extra_body"]["nvext"]["agent_hints"],
///     serde_json::json!({"priority": 5, "strict_priority": 1})
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Priority {
    /// A written number, sent as written (negated for vLLM). Higher is more urgent.
    Fixed(i32),
    /// Computed for each request from the running tactic (see [`Priority`]).
    Auto,
}

impl From<i32> for Priority {
    fn from(value: i32) -> Self {
        Priority::Fixed(value)
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Priority::Fixed(n) => write!(f, "{n}"),
            Priority::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for Priority {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Priority::Fixed(n) => serializer.serialize_i32(*n),
            Priority::Auto => serializer.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Priority {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Priority;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer (higher is more urgent) or `auto`")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Priority, E> {
                i32::try_from(v).map(Priority::Fixed).map_err(|_| {
                    E::invalid_value(serde::de::Unexpected::Signed(v), &"an i32 or `auto`")
                })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Priority, E> {
                i32::try_from(v).map(Priority::Fixed).map_err(|_| {
                    E::invalid_value(serde::de::Unexpected::Unsigned(v), &"an i32 or `auto`")
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Priority, E> {
                if v == "auto" {
                    Ok(Priority::Auto)
                } else {
                    Err(E::invalid_value(
                        serde::de::Unexpected::Str(v),
                        &"an integer or `auto`",
                    ))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl schemars::JsonSchema for Priority {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Priority".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Higher is more urgent; `auto` computes each request's priority from the tactic.",
            "oneOf": [
                {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                {"const": "auto"}
            ]
        })
    }
}

/// How a run's requests rank against other runs' under `priority: auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunClass {
    /// Someone waits for the run (`lllm run`): ranks above every batch request.
    #[default]
    Interactive,
    /// Work nobody watches (`lllm batch` items, unless configured).
    Batch,
}

impl RunClass {
    /// The tier: 1 for interactive, 0 for batch.
    pub fn tier(self) -> u32 {
        match self {
            RunClass::Interactive => 1,
            RunClass::Batch => 0,
        }
    }

    /// The name used on the command line and in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            RunClass::Interactive => "interactive",
            RunClass::Batch => "batch",
        }
    }
}

/// What waits for one request's answer: the input of `priority: auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Demand {
    /// Turns of the run that cannot start until this answer arrives.
    pub waiting_turns: u32,
    /// Finished branches of the request's parallel groups, whose answers wait for this one.
    pub waiting_branches: u32,
    /// The run's class.
    pub class: RunClass,
}

impl Demand {
    /// A demand of `class` with nothing waiting (a lone request: weight 1).
    pub fn of_class(class: RunClass) -> Self {
        Demand {
            class,
            ..Demand::default()
        }
    }

    /// 1 + the waiting turns + the waiting branches, at most [`MAX_WEIGHT`].
    pub fn weight(&self) -> u32 {
        1u32.saturating_add(self.waiting_turns)
            .saturating_add(self.waiting_branches)
            .min(MAX_WEIGHT)
    }

    /// The priority fields this demand gives under `profile`: the `priority` value as sent on the
    /// wire (after the profile's transformation) and, for Dynamo, the `strict_priority` tier.
    pub fn shape(&self, profile: Profile) -> AutoFields {
        let shape = profile.shape();
        if !shape.sends(HintField::Priority) {
            return AutoFields::default();
        }
        let weight = i64::from(self.weight());
        let tier = self.class.tier();
        if shape.sends(HintField::StrictPriority) {
            // A profile with a tier field of its own (Dynamo) gets the tier there, the weight alone
            // as the priority.
            AutoFields {
                priority: Some(shape.priority_to_wire(weight)),
                strict_priority: (tier > 0).then_some(tier),
            }
        } else {
            // Otherwise the tier goes into the number, above any weight.
            let ranked = TIER_SPAN * i64::from(tier) + weight;
            AutoFields {
                priority: Some(shape.priority_to_wire(ranked)),
                strict_priority: None,
            }
        }
    }
}

/// What `priority: auto` sends for one request, as it goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AutoFields {
    /// The `priority` value (already negated for vLLM).
    pub priority: Option<i64>,
    /// Dynamo's `strict_priority` tier.
    pub strict_priority: Option<u32>,
}
