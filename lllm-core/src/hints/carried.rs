//! An agent's hints as each of its fallback endpoints carries them.
//!
//! A fallback may speak another profile (`model_args.fallback[].profile`). The agent's hints were
//! checked against the agent's own profile; at a fallback they are the same settings, written by
//! that profile's wire table, which leaves out what the profile cannot carry. Computed once, when
//! the agent is built, and never refused: a fallback is another place to send the same call, not
//! another configuration (`lllm check` says what each fallback will not carry).

use super::{HintField, InferenceHints, Profile};
use crate::fallback::Fallback;

/// An agent's hints as one endpoint carries them: the settings that endpoint's profile can send,
/// and the ones it cannot (dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedHints {
    hints: InferenceHints,
    dropped: Vec<HintField>,
}

impl CarriedHints {
    /// The hints as sent there: the agent's settings under that endpoint's profile.
    pub fn hints(&self) -> &InferenceHints {
        &self.hints
    }

    /// The profile of that endpoint.
    pub fn profile(&self) -> Profile {
        self.hints.profile
    }

    /// The agent's settings that profile cannot carry, in [`HintField::ALL`] order.
    pub fn dropped(&self) -> &[HintField] {
        &self.dropped
    }
}

impl InferenceHints {
    /// These hints as an endpoint of `profile` carries them: every setting that profile's
    /// [`WireShape`](super::WireShape) has a place for, the others dropped (and listed).
    ///
    /// ```
    /// use lllm_core::{HintField, InferenceHints, Profile};
    ///
    /// let dynamo = InferenceHints::builder()
    ///     .profile(Profile::Dynamo)
    ///     .priority(5)
    ///     .strict_priority(2)
    ///     .build()?;
    /// let vllm = dynamo.carried_to(Profile::Vllm);
    /// assert_eq!(vllm.dropped(), [HintField::StrictPriority]);
    /// assert_eq!(vllm.hints().priority(), Some(5)); // sent negated, as vLLM wants it
    /// # Ok::<(), lllm_core::HintsError>(())
    /// ```
    pub fn carried_to(&self, profile: Profile) -> CarriedHints {
        let shape = profile.shape();
        let mut dropped = Vec::new();
        let mut carry = |field: HintField, set: bool| {
            let sent = shape.sends(field);
            if set && !sent {
                dropped.push(field);
            }
            sent
        };
        let hints = InferenceHints {
            profile,
            priority: self.priority.filter(|_| carry(HintField::Priority, true)),
            strict_priority: self
                .strict_priority
                .filter(|_| carry(HintField::StrictPriority, true)),
            osl: self.osl.filter(|_| carry(HintField::Osl, true)),
            speculative_prefill: self
                .speculative_prefill
                .filter(|_| carry(HintField::SpeculativePrefill, true)),
            cache_salt: self
                .cache_salt
                .clone()
                .filter(|_| carry(HintField::CacheSalt, true)),
            ..self.clone()
        };
        CarriedHints { hints, dropped }
    }

    /// These hints as each of `fallback` carries them, in order: under the entry's profile, else
    /// these hints' own.
    pub fn carried_by(&self, fallback: &[Fallback]) -> Vec<CarriedHints> {
        fallback
            .iter()
            .map(|entry| self.carried_to(entry.profile.unwrap_or(self.profile)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hints with every field `profile` can send set.
    fn full(profile: Profile) -> InferenceHints {
        let mut builder = InferenceHints::builder().profile(profile);
        if profile.sends(HintField::Priority) {
            builder = builder.priority(3);
        }
        if profile.sends(HintField::StrictPriority) {
            builder = builder.strict_priority(2);
        }
        if profile.sends(HintField::Osl) {
            builder = builder.osl(64);
        }
        if profile.sends(HintField::SpeculativePrefill) {
            builder = builder.speculative_prefill(true);
        }
        if profile.sends(HintField::CacheSalt) {
            builder = builder.cache_salt("tenant-a");
        }
        builder.build().expect("valid for its own profile")
    }

    #[test]
    fn every_profile_carries_what_its_table_sends_and_drops_the_rest() {
        for from in Profile::ALL {
            for to in Profile::ALL {
                let carried = full(from).carried_to(to);
                let expected: Vec<HintField> = HintField::ALL
                    .into_iter()
                    .filter(|f| from.sends(*f) && !to.sends(*f))
                    .collect();
                assert_eq!(carried.dropped(), expected, "{from} to {to}");
                assert_eq!(carried.profile(), to);
                // What is carried is a valid setting of that profile: the builder accepts it.
                let rebuilt = carried.hints().to_builder().build();
                assert_eq!(rebuilt.as_ref(), Ok(carried.hints()), "{from} to {to}");
            }
        }
    }
}
