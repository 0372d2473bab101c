//! A toolbox's changing sets: replaced in place, only when changed, clashes left out.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lllm_core::ToolSpec;
use serde_json::{json, Value};

use super::{ChangingTools, Toolbox};
use crate::tools::{Tool, ToolError, ToolOutput};

#[derive(Debug)]
struct Named {
    spec: ToolSpec,
    source: &'static str,
}

#[async_trait]
impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text(String::new()))
    }
    fn source(&self) -> String {
        self.source.to_owned()
    }
}

fn tool(name: &str, source: &'static str) -> Arc<dyn Tool> {
    Arc::new(Named {
        spec: ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        },
        source,
    })
}

/// A set whose next answer is given by the test.
#[derive(Debug, Default)]
struct Set {
    next: Mutex<Option<Vec<Arc<dyn Tool>>>>,
}

#[async_trait]
impl ChangingTools for Set {
    fn source(&self) -> String {
        "server".into()
    }
    async fn changed(&self) -> Option<Vec<Arc<dyn Tool>>> {
        self.next.lock().expect("lock").take()
    }
}

fn names(toolbox: &Toolbox) -> Vec<String> {
    toolbox.specs().into_iter().map(|s| s.name).collect()
}

#[tokio::test]
async fn a_changed_set_is_replaced_in_place_and_an_unchanged_one_costs_nothing() {
    let set = Arc::new(Set::default());
    let toolbox = Toolbox::changing(
        vec![
            tool("own", "mine"),
            tool("a", "server"),
            tool("b", "server"),
            tool("last", "mine"),
        ],
        vec![set.clone()],
    )
    .expect("valid");
    assert!(toolbox.refreshed().await.is_none(), "nothing changed");
    *set.next.lock().expect("lock") = Some(vec![
        tool("a", "server"),
        tool("own", "server"),
        tool("c", "server"),
    ]);
    let refreshed = toolbox.refreshed().await.expect("changed");
    assert_eq!(
        names(&refreshed),
        ["own", "a", "c", "last"],
        "the server's tools in their place; one named like another tool left out"
    );
    assert!(
        refreshed.refreshed().await.is_none(),
        "the change was taken"
    );
    *set.next.lock().expect("lock") = Some(Vec::new());
    let emptied = refreshed.refreshed().await.expect("changed");
    assert_eq!(names(&emptied), ["own", "last"]);
}
