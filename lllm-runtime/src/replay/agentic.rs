//! Reading NVIDIA Dynamo's agentic traces (`dynamo.agentic_mooncake` version 2) as hostile input:
//! the header, every row's fields (with the same rules as Dynamo's simulator), and then the request
//! graph as a whole: every dependency names a request of the same play, and no request waits for
//! itself, directly or through others.
//!
//! Memory grows with the trace's rows and bytes (each bounded by [`limits`](super::limits)), never
//! with a number written in it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lllm_core::{
    InferenceHints, Profile, Relation, Trigger, AGENTIC_SCHEMA, AGENTIC_VERSION, TRACE_FORMAT,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::limits::{MAX_BLOCK_TOKENS, MAX_PROMPT_TOKENS, MAX_SCHEDULE_MS, MAX_TOKENS};
use super::request::{priority_in_range, Request};
use super::text::{describe, kind, plain, plain_in, shorten};
use super::ReplayError;

/// The fields every row needs, as the error for a missing one lists them.
const REQUIRED: &str = "request_id, play_id, session_id, model, input_length, output_length, \
                        hash_ids and not_before_ms";

/// An agentic trace read and checked: its requests in trace order, each with what it waits for.
#[derive(Debug, Clone)]
pub(super) struct Graph {
    pub(super) nodes: Vec<Node>,
    /// Distinct (play, session) pairs.
    pub(super) sessions: usize,
}

/// One request of the graph.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) request_id: Arc<str>,
    pub(super) play_id: Arc<str>,
    pub(super) session_id: Arc<str>,
    /// What is sent; its `parent` is the session its play's `spawn` edge came from.
    pub(super) request: Request,
    /// Milliseconds from the replay's start, the trace's smallest `not_before_ms` being 0.
    pub(super) not_before_ms: f64,
    pub(super) dependencies: Box<[Edge]>,
}

/// A dependency, resolved: the index of the request waited for in [`Graph::nodes`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Edge {
    pub(super) from: usize,
    pub(super) trigger: Trigger,
    pub(super) relation: Relation,
    pub(super) delay_ms: f64,
}

/// Checks the header line of an agentic trace and returns its block size.
pub(super) fn read_header(text: &str) -> Result<usize, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("not valid JSON ({})", plain_in(&e, text)))?;
    let Some(header) = value.as_object() else {
        return Err(format!(
            "a trace line must be a JSON object, not {}",
            kind(&value)
        ));
    };
    let needs = "the header needs schema, version, block_size, hash_id_scope and source";
    let field = |name: &str| {
        header
            .get(name)
            .ok_or_else(|| format!("missing field `{name}`; {needs}"))
    };
    check_format(field("schema")?, field("version"))?;
    let block = header_block_size(field("block_size")?)?;
    let scope = field("hash_id_scope")?;
    if scope.as_str() != Some("local") {
        return Err(format!(
            "hash_id_scope: {} is not `local`, the only scope there is (hash ids numbered within \
             the trace)",
            describe(scope)
        ));
    }
    check_source(field("source")?)?;
    Ok(block)
}

/// Checks that the header names this format and version (`version` is looked up only once the
/// schema is right, so a missing one is reported after a wrong schema).
fn check_format(schema: &Value, version: Result<&Value, String>) -> Result<(), String> {
    if schema.as_str() != Some(AGENTIC_SCHEMA) {
        return Err(format!(
            "schema: {} is not `{AGENTIC_SCHEMA}`; this lllm reads `{TRACE_FORMAT}` and \
             `{AGENTIC_SCHEMA}` version {AGENTIC_VERSION} traces",
            describe(schema)
        ));
    }
    let version = version?;
    if version.as_u64() != Some(u64::from(AGENTIC_VERSION)) {
        return Err(format!(
            "version: {} is not {AGENTIC_VERSION}; this lllm reads `{AGENTIC_SCHEMA}` version \
             {AGENTIC_VERSION}",
            describe(version)
        ));
    }
    Ok(())
}

/// The header's `block_size`, from 1 to [`MAX_BLOCK_TOKENS`].
fn header_block_size(block: &Value) -> Result<usize, String> {
    match block.as_u64() {
        Some(n) if (1..=MAX_BLOCK_TOKENS as u64).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "block_size: {} is out of range; use a whole number of tokens from 1 to \
             {MAX_BLOCK_TOKENS}",
            describe(block)
        )),
    }
}

/// Checks the header's `source`: an object with non-empty `format` and `digest`, as Dynamo requires.
fn check_source(source: &Value) -> Result<(), String> {
    if !source.is_object() {
        return Err(format!(
            "source: expected an object {{\"format\", \"digest\"}} (who wrote the trace, and an \
             id of what was recorded), found {}",
            describe(source)
        ));
    }
    let filled = |name: &str| {
        source
            .get(name)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    };
    match ["format", "digest"].into_iter().find(|name| !filled(name)) {
        Some(name) => Err(format!(
            "source.{name}: missing or empty; the source needs non-empty strings `format` (who \
             wrote the trace) and `digest` (an id of what was recorded)"
        )),
        None => Ok(()),
    }
}

/// A row as JSON gives it, before its values are checked.
#[derive(Deserialize)]
struct RawRow {
    request_id: String,
    play_id: String,
    session_id: String,
    model: String,
    #[serde(alias = "input_tokens")]
    input_length: u64,
    #[serde(alias = "output_tokens")]
    output_length: u64,
    hash_ids: Vec<u64>,
    not_before_ms: f64,
    #[serde(default)]
    dependencies: Vec<RawDependency>,
    #[serde(default)]
    priority: Option<i64>,
}

#[derive(Deserialize)]
struct RawDependency {
    request_id: String,
    trigger: Trigger,
    delay_ms: f64,
    relation: Relation,
}

/// A dependency before the rows it names have all been read.
struct Pending {
    request_id: Box<str>,
    trigger: Trigger,
    relation: Relation,
    delay_ms: f64,
}

/// Requests as rows arrive.
pub(super) struct Builder {
    block_size: usize,
    /// Hints that send session ids, to check that each recorded id can go into a header.
    ids: InferenceHints,
    max_rows: usize,
    /// Each request id, and its index in `nodes`.
    index: HashMap<Arc<str>, usize>,
    /// Play and session ids, each kept once.
    names: HashMap<Box<str>, Arc<str>>,
    nodes: Vec<Node>,
    lines: Vec<usize>,
    pending: Vec<Vec<Pending>>,
}

impl Builder {
    pub(super) fn new(block_size: usize, ids: InferenceHints, max_rows: usize) -> Builder {
        Builder {
            block_size,
            ids,
            max_rows,
            index: HashMap::new(),
            names: HashMap::new(),
            nodes: Vec::new(),
            lines: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// How many requests were read.
    pub(super) fn requests(&self) -> usize {
        self.nodes.len()
    }

    fn name(&mut self, text: String) -> Arc<str> {
        if let Some(name) = self.names.get(text.as_str()) {
            return name.clone();
        }
        let name: Arc<str> = Arc::from(text.as_str());
        self.names.insert(text.into_boxed_str(), name.clone());
        name
    }

    /// Reads the row on `line`.
    pub(super) fn row(&mut self, text: &str, line: usize) -> Result<(), String> {
        let mut row: RawRow = serde_json::from_str(text).map_err(|e| row_error(text, &e))?;
        if self.nodes.len() >= self.max_rows {
            return Err(format!(
                "more than {} requests; split the trace into smaller ones",
                self.max_rows
            ));
        }
        let (request, pending) = check_row(&mut row, self.block_size, &self.ids)?;
        if let Some(first) = self.index.get(row.request_id.as_str()) {
            return Err(format!(
                "request_id: `{}` is already the request_id of line {}; request ids are unique \
                 in a trace",
                shorten(&row.request_id),
                self.lines[*first]
            ));
        }
        let request_id: Arc<str> = Arc::from(row.request_id.as_str());
        let play_id = self.name(row.play_id);
        let session_id = self.name(row.session_id);
        self.index.insert(request_id.clone(), self.nodes.len());
        self.nodes.push(Node {
            request_id,
            play_id,
            session_id,
            request,
            not_before_ms: row.not_before_ms,
            dependencies: Box::new([]),
        });
        self.lines.push(line);
        self.pending.push(pending);
        Ok(())
    }

    /// The graph, once every row is read: dependencies resolved and checked, no cycle, times within
    /// [`MAX_SCHEDULE_MS`], `not_before_ms` shifted so the smallest is 0, and each request's parent
    /// session found.
    pub(super) fn finish(mut self) -> Result<Graph, ReplayError> {
        self.resolve()?;
        let order = self.order()?;
        self.check_schedule(&order)?;
        self.find_parents();
        let sessions = self
            .nodes
            .iter()
            .map(|n| (&*n.play_id, &*n.session_id))
            .collect::<HashSet<_>>()
            .len();
        Ok(Graph {
            nodes: self.nodes,
            sessions,
        })
    }

    /// Each dependency as the index of the request it names: one of the trace, not the request
    /// itself, of the same play.
    fn resolve(&mut self) -> Result<(), ReplayError> {
        let pending = std::mem::take(&mut self.pending);
        for (i, dependencies) in pending.into_iter().enumerate() {
            let line = self.lines[i];
            let mut edges = Vec::with_capacity(dependencies.len());
            for (d, dependency) in dependencies.into_iter().enumerate() {
                let named = shorten(&dependency.request_id);
                let at = |message: String| ReplayError::Format {
                    line,
                    message: format!("dependencies[{d}].request_id: {message}"),
                };
                let Some(&from) = self.index.get(&*dependency.request_id) else {
                    return Err(at(format!(
                        "`{named}` is not the request_id of any request in the trace"
                    )));
                };
                if from == i {
                    return Err(at(format!(
                        "`{named}` is this request itself; a request cannot wait for itself"
                    )));
                }
                let (theirs, ours) = (&self.nodes[from].play_id, &self.nodes[i].play_id);
                if theirs != ours {
                    return Err(at(format!(
                        "`{named}` is in play `{}`, and this request in play `{}`; a request \
                         waits only for requests of its own play",
                        shorten(theirs),
                        shorten(ours)
                    )));
                }
                edges.push(Edge {
                    from,
                    trigger: dependency.trigger,
                    relation: dependency.relation,
                    delay_ms: dependency.delay_ms,
                });
            }
            self.nodes[i].dependencies = edges.into_boxed_slice();
        }
        Ok(())
    }

    /// The requests in an order where each comes after every request it waits for (Kahn's
    /// algorithm). When there is none, the error names the requests of a cycle.
    fn order(&self) -> Result<Vec<usize>, ReplayError> {
        let n = self.nodes.len();
        let (starts, waiting) = dependents(&self.nodes);
        let mut remaining: Vec<usize> = self.nodes.iter().map(|n| n.dependencies.len()).collect();
        let mut ready: Vec<usize> = (0..n).rev().filter(|i| remaining[*i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = ready.pop() {
            order.push(i);
            for &j in &waiting[starts[i]..starts[i + 1]] {
                remaining[j] -= 1;
                if remaining[j] == 0 {
                    ready.push(j);
                }
            }
        }
        if order.len() == n {
            Ok(order)
        } else {
            Err(self.cycle(&remaining))
        }
    }

    /// The error naming a cycle among the requests Kahn's algorithm left (`remaining` > 0): each of
    /// them waits for at least one other such request, so following those edges from the first one
    /// comes back to a request already seen.
    fn cycle(&self, remaining: &[usize]) -> ReplayError {
        let blocked = |i: usize| remaining.get(i).is_some_and(|r| *r > 0);
        let start = (0..self.nodes.len()).find(|i| blocked(*i)).unwrap_or(0);
        let mut seen = vec![usize::MAX; self.nodes.len()];
        let mut path = Vec::new();
        let mut current = start;
        let from = loop {
            if seen[current] != usize::MAX {
                break seen[current];
            }
            seen[current] = path.len();
            path.push(current);
            match self.nodes[current]
                .dependencies
                .iter()
                .find(|e| blocked(e.from))
            {
                Some(edge) => current = edge.from,
                None => break path.len() - 1,
            }
        };
        let mut cycle = path.split_off(from);
        // Start at the request that comes first in the trace.
        if let Some(first) = (0..cycle.len()).min_by_key(|i| cycle[*i]) {
            cycle.rotate_left(first);
        }
        const SHOWN: usize = 8;
        let mut chain: Vec<String> = cycle
            .iter()
            .take(SHOWN)
            .map(|i| format!("`{}`", shorten(&self.nodes[*i].request_id)))
            .collect();
        if cycle.len() > SHOWN {
            chain.push(format!("… ({} requests in all)", cycle.len()));
        }
        chain.push(format!("`{}`", shorten(&self.nodes[cycle[0]].request_id)));
        ReplayError::Format {
            line: self.lines[cycle[0]],
            message: format!(
                "dependencies: the requests {} wait for each other in a cycle (each waits for the \
                 next), so none of them can ever be sent; a request may wait only for requests that \
                 do not wait for it",
                chain.join(" → ")
            ),
        }
    }

    /// Shifts `not_before_ms` so that the smallest is 0, and checks that no request would be sent
    /// more than [`MAX_SCHEDULE_MS`] after the start even if every answer were instant.
    fn check_schedule(&mut self, order: &[usize]) -> Result<(), ReplayError> {
        let least = self
            .nodes
            .iter()
            .map(|n| n.not_before_ms)
            .fold(f64::INFINITY, f64::min);
        let most = MAX_SCHEDULE_MS as f64;
        let mut earliest = vec![0f64; self.nodes.len()];
        for &i in order {
            let node = &self.nodes[i];
            let shifted = node.not_before_ms - least;
            let line = self.lines[i];
            if shifted > most {
                return Err(ReplayError::Format {
                    line,
                    message: format!(
                        "not_before_ms: {} is {shifted:.0} ms after the trace's smallest \
                         not_before_ms ({least}), more than the {MAX_SCHEDULE_MS} ms (7 days) a \
                         replay may last",
                        node.not_before_ms
                    ),
                });
            }
            let at = node
                .dependencies
                .iter()
                .map(|e| earliest[e.from] + e.delay_ms)
                .fold(shifted, f64::max);
            if at > most {
                return Err(ReplayError::Format {
                    line,
                    message: format!(
                        "dependencies: request `{}` would be sent {at:.0} ms after the start at the \
                         earliest (its not_before_ms, and the delay_ms along the requests it waits \
                         for), more than the {MAX_SCHEDULE_MS} ms (7 days) a replay may last; \
                         shorten the delays",
                        shorten(&node.request_id)
                    ),
                });
            }
            earliest[i] = at;
        }
        for node in &mut self.nodes {
            node.not_before_ms -= least;
        }
        Ok(())
    }

    /// Each request's parent session: the session its `spawn` dependency came from, else that of
    /// the first request of its session (in its play, in trace order) that has one — a fork's
    /// later turns carry their parent too, as `lllm run` sends them.
    fn find_parents(&mut self) {
        let spawned_from = |node: &Node, nodes: &[Node]| -> Option<Arc<str>> {
            node.dependencies
                .iter()
                .filter(|e| e.relation == Relation::Spawn)
                .map(|e| &nodes[e.from].session_id)
                .find(|parent| **parent != node.session_id)
                .cloned()
        };
        let mut parents: HashMap<(Arc<str>, Arc<str>), Arc<str>> = HashMap::new();
        let mut own = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let parent = spawned_from(node, &self.nodes);
            if let Some(parent) = &parent {
                parents
                    .entry((node.play_id.clone(), node.session_id.clone()))
                    .or_insert_with(|| parent.clone());
            }
            own.push(parent);
        }
        for (node, parent) in self.nodes.iter_mut().zip(own) {
            node.request.parent = parent.or_else(|| {
                parents
                    .get(&(node.play_id.clone(), node.session_id.clone()))
                    .cloned()
            });
        }
    }
}

/// For each request, the requests waiting for it (one entry per dependency): request `i`'s are
/// `waiting[starts[i]..starts[i + 1]]`.
fn dependents(nodes: &[Node]) -> (Vec<usize>, Vec<usize>) {
    let mut starts = vec![0usize; nodes.len() + 1];
    for node in nodes {
        for edge in &node.dependencies {
            starts[edge.from + 1] += 1;
        }
    }
    for i in 0..nodes.len() {
        starts[i + 1] += starts[i];
    }
    let mut next = starts.clone();
    let mut waiting = vec![0usize; starts[nodes.len()]];
    for (j, node) in nodes.iter().enumerate() {
        for edge in &node.dependencies {
            waiting[next[edge.from]] = j;
            next[edge.from] += 1;
        }
    }
    (starts, waiting)
}

fn relation_name(relation: Relation) -> &'static str {
    match relation {
        Relation::Sequence => "sequence",
        Relation::Spawn => "spawn",
        Relation::Join => "join",
        Relation::ReplayBarrier => "replay_barrier",
    }
}

/// Range checks of a row that parsed, and what replay keeps of it besides the ids.
fn check_row(
    row: &mut RawRow,
    block: usize,
    ids: &InferenceHints,
) -> Result<(Request, Vec<Pending>), String> {
    check_names(row, ids)?;
    let blocks = check_lengths(row, block)?;
    if row.not_before_ms.is_nan() || row.not_before_ms < 0.0 {
        return Err(format!(
            "not_before_ms: {} is out of range; use a number of milliseconds from 0",
            row.not_before_ms
        ));
    }
    let pending = check_dependencies(std::mem::take(&mut row.dependencies))?;
    let priority = priority_in_range(row.priority, "priority")?;
    // In 1..=block: blocks = ceil(input_length / block), input_length > 0.
    let last = row.input_length - (blocks - 1) * block as u64;
    let request = Request {
        parent: None,
        timestamp: 0,
        delay: 0,
        output_length: row.output_length,
        hash_ids: std::mem::take(&mut row.hash_ids).into_boxed_slice(),
        priority,
        strict_priority: None,
        osl: None,
        // Dynamo's format carries Dynamo's priority.
        sent_with: Some(Profile::Dynamo),
        last_block: usize::try_from(last).ok(),
    };
    Ok((request, pending))
}

/// Every id and the model are non-empty, and the session id can go into a header.
fn check_names(row: &RawRow, ids: &InferenceHints) -> Result<(), String> {
    for (name, value) in [
        ("request_id", &row.request_id),
        ("play_id", &row.play_id),
        ("session_id", &row.session_id),
        ("model", &row.model),
    ] {
        if value.trim().is_empty() {
            return Err(format!(
                "{name}: empty; every request needs a non-empty {name}"
            ));
        }
    }
    match ids.session_ids(&row.session_id, None) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("session_id: {e}")),
    }
}

/// Checks the token counts and that `hash_ids` has one id per block of `input_length`; returns the
/// number of blocks.
fn check_lengths(row: &RawRow, block: usize) -> Result<u64, String> {
    if !(1..=MAX_TOKENS).contains(&row.input_length) {
        return Err(format!(
            "input_length: {} is out of range; use a whole number of tokens from 1 to {MAX_TOKENS}",
            row.input_length
        ));
    }
    if row.output_length > MAX_TOKENS {
        return Err(format!(
            "output_length: {} is out of range; use a whole number of tokens from 0 to \
             {MAX_TOKENS}",
            row.output_length
        ));
    }
    let size = block as u64;
    let blocks = row.input_length.div_ceil(size);
    let most = MAX_PROMPT_TOKENS / size;
    if blocks > most {
        return Err(format!(
            "input_length: {} tokens in blocks of {block} is more than the {MAX_PROMPT_TOKENS} \
             tokens a replayed prompt may have (at most {most} blocks at this block size)",
            row.input_length
        ));
    }
    if row.hash_ids.len() as u64 != blocks {
        return Err(format!(
            "hash_ids: {} ids, but input_length {} in blocks of {block} tokens needs exactly \
             {blocks} (one per block, the last one may be partial)",
            row.hash_ids.len(),
            row.input_length
        ));
    }
    Ok(blocks)
}

/// Each dependency checked on its own (what it names is resolved once every row is read).
fn check_dependencies(dependencies: Vec<RawDependency>) -> Result<Vec<Pending>, String> {
    let mut pending = Vec::with_capacity(dependencies.len());
    for (d, dependency) in dependencies.into_iter().enumerate() {
        if dependency.request_id.trim().is_empty() {
            return Err(format!(
                "dependencies[{d}].request_id: empty; name the request waited for"
            ));
        }
        if !(0.0..=MAX_SCHEDULE_MS as f64).contains(&dependency.delay_ms) {
            return Err(format!(
                "dependencies[{d}].delay_ms: {} is out of range; use a number of milliseconds \
                 from 0 to {MAX_SCHEDULE_MS} (7 days)",
                dependency.delay_ms
            ));
        }
        if dependency.trigger == Trigger::Dispatch && dependency.relation != Relation::Spawn {
            return Err(format!(
                "dependencies[{d}].trigger: `dispatch` is allowed only on a `spawn` dependency, \
                 and this one is `{}`; use `completion`",
                relation_name(dependency.relation)
            ));
        }
        pending.push(Pending {
            request_id: dependency.request_id.into_boxed_str(),
            trigger: dependency.trigger,
            relation: dependency.relation,
            delay_ms: dependency.delay_ms,
        });
    }
    Ok(pending)
}

/// The message for a row that did not parse.
fn row_error(text: &str, error: &serde_json::Error) -> String {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return format!("not valid JSON ({})", plain_in(error, text)),
    };
    if value.get("schema").is_some() || value.get("format").is_some() {
        return "a second header; a trace has one header, on its first line (were two traces \
                joined? replay them one at a time)"
            .into();
    }
    diagnose(&value).unwrap_or_else(|| format!("not an agentic trace row: {}", plain(error)))
}

const TRIGGERS: &[&str] = &["completion", "dispatch"];
const RELATIONS: &[&str] = &["sequence", "spawn", "join", "replay_barrier"];

/// Names the first field of a row that is missing or of the wrong kind, if one is.
fn diagnose(value: &Value) -> Option<String> {
    let Some(row) = value.as_object() else {
        return Some(format!(
            "a trace line must be a JSON object, not {}",
            kind(value)
        ));
    };
    diagnose_names(row)
        .or_else(|| diagnose_lengths(row))
        .or_else(|| diagnose_hash_ids(row))
        .or_else(|| match row.get("not_before_ms") {
            None => Some(missing("not_before_ms")),
            Some(found) if found.is_number() => None,
            Some(other) => Some(format!(
                "not_before_ms: expected a number of milliseconds from 0, found {}",
                describe(other)
            )),
        })
        .or_else(|| row.get("dependencies").and_then(diagnose_dependencies))
        .or_else(|| match row.get("priority") {
            None | Some(Value::Null) => None,
            Some(found) if found.is_i64() => None,
            Some(other) => Some(format!(
                "priority: expected a whole number from {} to {}, found {}",
                i32::MIN,
                i32::MAX,
                describe(other)
            )),
        })
}

fn missing(name: &str) -> String {
    format!("missing field `{name}`; every row needs {REQUIRED}")
}

/// The ids and the model: strings.
fn diagnose_names(row: &Map<String, Value>) -> Option<String> {
    ["request_id", "play_id", "session_id", "model"]
        .into_iter()
        .find_map(|name| match row.get(name) {
            None => Some(missing(name)),
            Some(Value::String(_)) => None,
            Some(other) => Some(format!(
                "{name}: expected a string, found {}",
                describe(other)
            )),
        })
}

/// The token counts (or their aliases): whole numbers.
fn diagnose_lengths(row: &Map<String, Value>) -> Option<String> {
    [
        ("input_length", "input_tokens"),
        ("output_length", "output_tokens"),
    ]
    .into_iter()
    .find_map(|(name, alias)| {
        let Some((name, found)) = row.get_key_value(name).or_else(|| row.get_key_value(alias))
        else {
            return Some(missing(name));
        };
        found.as_u64().is_none().then(|| {
            format!(
                "{name}: expected a whole number of tokens, found {}",
                describe(found)
            )
        })
    })
}

/// `hash_ids`: an array of whole numbers.
fn diagnose_hash_ids(row: &Map<String, Value>) -> Option<String> {
    match row.get("hash_ids") {
        None => Some(missing("hash_ids")),
        Some(Value::Array(items)) => {
            let (i, item) = items
                .iter()
                .enumerate()
                .find(|(_, v)| v.as_u64().is_none())?;
            Some(format!(
                "hash_ids[{i}]: expected a block id, a whole number from 0 to {}, found {}",
                u64::MAX,
                describe(item)
            ))
        }
        Some(other) => Some(format!(
            "hash_ids: expected an array of block ids, found {}",
            describe(other)
        )),
    }
}

fn diagnose_dependencies(value: &Value) -> Option<String> {
    let items = match value {
        Value::Array(items) => items,
        Value::Null => {
            return Some(
                "dependencies: null is not allowed; write [] (or leave the field out) for a \
                 request that waits for nothing"
                    .into(),
            )
        }
        other => {
            return Some(format!(
                "dependencies: expected an array of {{request_id, trigger, delay_ms, relation}} \
                 objects, found {}",
                describe(other)
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .find_map(|(d, item)| diagnose_dependency(item).map(|m| format!("dependencies[{d}]{m}")))
}

/// What is wrong with one dependency, as `.field: problem` or `: problem`.
fn diagnose_dependency(value: &Value) -> Option<String> {
    let Some(dependency) = value.as_object() else {
        return Some(format!(
            ": expected an object {{request_id, trigger, delay_ms, relation}}, found {}",
            describe(value)
        ));
    };
    for name in ["request_id", "trigger", "delay_ms", "relation"] {
        if !dependency.contains_key(name) {
            return Some(format!(
                ": missing field `{name}`; every dependency needs request_id, trigger, delay_ms \
                 and relation"
            ));
        }
    }
    let one_of = |name: &str, allowed: &[&str], map: &Map<String, Value>| match map.get(name) {
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => None,
        Some(Value::String(s)) => Some(format!(
            ".{name}: `{}` is not one of {}",
            shorten(s),
            allowed.join(", ")
        )),
        Some(other) => Some(format!(
            ".{name}: expected one of {}, found {}",
            allowed.join(", "),
            describe(other)
        )),
        None => None,
    };
    if let Some(found) = dependency.get("request_id").filter(|v| !v.is_string()) {
        return Some(format!(
            ".request_id: expected a string, found {}",
            describe(found)
        ));
    }
    if let Some(problem) = one_of("trigger", TRIGGERS, dependency) {
        return Some(problem);
    }
    if let Some(found) = dependency.get("delay_ms").filter(|v| !v.is_number()) {
        return Some(format!(
            ".delay_ms: expected a number of milliseconds from 0 to {MAX_SCHEDULE_MS}, found {}",
            describe(found)
        ));
    }
    one_of("relation", RELATIONS, dependency)
}
