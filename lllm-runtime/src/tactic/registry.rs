//! Tactic types by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use lllm_core::TacticSpec;
use lllm_core::{CHAT_TACTIC, STEPS_TACTIC};

use super::{BoxError, ChatTactic, StepsTactic, Tactic, TacticError};

/// Makes a tactic from a tactic file's spec (its `steps`, `output`, `config`).
type TacticFactory = Arc<dyn Fn(&TacticSpec) -> Result<Box<dyn Tactic>, BoxError> + Send + Sync>;

/// Tactic types by the name `tactic_type:` uses. [`TacticRegistry::new`] has `chat` and `steps`.
#[derive(Clone)]
pub struct TacticRegistry {
    /// Each factory, and whether it is the built-in one of its name.
    factories: BTreeMap<String, (TacticFactory, bool)>,
}

impl std::fmt::Debug for TacticRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TacticRegistry")
            .field("types", &self.names())
            .finish()
    }
}

impl Default for TacticRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl TacticRegistry {
    /// The built-in types: `chat` and `steps`.
    pub fn new() -> Self {
        let mut registry = TacticRegistry {
            factories: BTreeMap::new(),
        };
        registry.register(CHAT_TACTIC, |_| Ok(Box::new(ChatTactic) as Box<dyn Tactic>));
        registry.register(STEPS_TACTIC, |spec| {
            Ok(Box::new(StepsTactic::new(
                spec.steps().to_vec(),
                spec.output().map(str::to_owned),
            )) as Box<dyn Tactic>)
        });
        for (_, builtin) in registry.factories.values_mut() {
            *builtin = true;
        }
        registry
    }

    /// Adds (or replaces) the type `name`. The factory reads the spec (its `config:`); its error is a
    /// usage error ([`TacticError::Invalid`]).
    pub fn register(
        &mut self,
        name: &str,
        factory: impl Fn(&TacticSpec) -> Result<Box<dyn Tactic>, BoxError> + Send + Sync + 'static,
    ) -> &mut Self {
        self.factories
            .insert(name.to_owned(), (Arc::new(factory), false));
        self
    }

    /// Whether `name` is still the built-in tactic of that name (not replaced by [`register`]).
    ///
    /// [`register`]: Self::register
    pub fn is_builtin(&self, name: &str) -> bool {
        self.factories
            .get(name)
            .is_some_and(|(_, builtin)| *builtin)
    }

    /// The registered names.
    pub fn names(&self) -> Vec<String> {
        self.factories.keys().cloned().collect()
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// The tactic for `spec.tactic_type()`.
    pub fn create(&self, spec: &TacticSpec) -> Result<Box<dyn Tactic>, TacticError> {
        let (factory, _) =
            self.factories
                .get(spec.tactic_type())
                .ok_or_else(|| TacticError::UnknownType {
                    name: spec.tactic_type().to_owned(),
                    known: self.names(),
                })?;
        factory(spec).map_err(TacticError::invalid)
    }
}
