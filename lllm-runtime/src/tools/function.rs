//! Tools from async Rust closures whose argument type describes itself with `schemars`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use lllm_core::ToolSpec;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolError, ToolOutput};

/// A tool whose arguments are `A` (its JSON Schema comes from `schemars`) and whose work is `f`.
///
/// ```
/// use lllm_runtime::tool_fn;
/// use lllm_runtime::tools::ToolError;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { text: String }
/// let count = tool_fn("word_count", "Count the words of a text", |args: Args| async move {
///     Ok::<_, ToolError>(args.text.split_whitespace().count().to_string())
/// });
/// assert_eq!(count.spec().name, "word_count");
/// ```
pub fn tool_fn<A, F, Fut, O, E>(name: &str, description: &str, f: F) -> Arc<dyn Tool>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
    O: Into<ToolOutput>,
    E: fmt::Display,
{
    let parameters = schema_of::<A>();
    Arc::new(FnTool {
        spec: ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
        },
        f,
        _args: PhantomData,
    })
}

/// The JSON Schema of `T` as servers take it: without `$schema` (some reject it) and `title`.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

struct FnTool<A, F> {
    spec: ToolSpec,
    f: F,
    _args: PhantomData<fn(A)>,
}

impl<A, F> fmt::Debug for FnTool<A, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<A, F, Fut, O, E> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
    O: Into<ToolOutput>,
    E: fmt::Display,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: A = serde_json::from_value(arguments)
            .map_err(|e| ToolError::new(format!("the arguments do not fit: {e}")))?;
        (self.f)(args)
            .await
            .map(Into::into)
            .map_err(|e| ToolError::new(e.to_string()))
    }
}
