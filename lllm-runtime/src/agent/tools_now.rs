//! The agent's tools between requests: a server that said its tool list changed is listed again
//! before the next request is built, never while one is being answered, so the tools a request
//! offers (and a cached prefix) change only when the server's list did.

use std::sync::{Arc, PoisonError};

use super::Agent;
use crate::tools::Toolbox;

impl Agent {
    /// The agent's tools as they are now.
    pub(crate) fn toolbox(&self) -> Arc<Toolbox> {
        self.toolbox
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The tools for the next request of a turn that has `current`: the agent's latest, listed
    /// again where a server's list changed (and kept for the agent's later requests).
    pub(crate) async fn tools_for_next_request(&self, current: &Arc<Toolbox>) -> Arc<Toolbox> {
        let latest = self.toolbox();
        let Some(refreshed) = latest.refreshed().await else {
            return if Arc::ptr_eq(&latest, current) {
                current.clone()
            } else {
                latest
            };
        };
        let refreshed = Arc::new(refreshed);
        *self.toolbox.write().unwrap_or_else(PoisonError::into_inner) = refreshed.clone();
        refreshed
    }
}
