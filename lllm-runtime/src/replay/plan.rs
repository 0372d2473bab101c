//! When each replayed request is due: a trace as requests and the edges between them, whatever its
//! format, and the schedule that releases a request once what it waits for is done.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use lllm_core::Trigger;

use super::agentic::Graph;
use super::read::{Session, Trace};
use super::request::Request;

/// One request to send.
pub(super) struct Step<'t> {
    pub(super) session: &'t str,
    pub(super) request: &'t Request,
    pub(super) request_id: Option<&'t str>,
    pub(super) play_id: Option<&'t str>,
    not_before_ms: f64,
}

/// A trace as requests and the edges between them, whatever its format: an `lllm-trace/1` session
/// is a chain in which each request waits for the previous one's answer and then its `delay`.
pub(super) struct Plan<'t> {
    pub(super) steps: Vec<Step<'t>>,
    /// How many requests each step waits for.
    waits: Vec<usize>,
    /// The steps waiting for step `i`: `edges[starts[i]..starts[i + 1]]`, as (step, trigger, delay
    /// in ms).
    starts: Vec<usize>,
    edges: Vec<(usize, Trigger, f64)>,
}

impl<'t> Plan<'t> {
    pub(super) fn of(trace: &'t Trace) -> Plan<'t> {
        match &trace.graph {
            Some(graph) => Plan::of_graph(graph),
            None => Plan::of_sessions(&trace.sessions, trace.requests()),
        }
    }

    /// An agentic trace's graph, its edges grouped by the request waited for.
    fn of_graph(graph: &'t Graph) -> Plan<'t> {
        let steps = graph
            .nodes
            .iter()
            .map(|node| Step {
                session: &node.session_id,
                request: &node.request,
                request_id: Some(&node.request_id),
                play_id: Some(&node.play_id),
                not_before_ms: node.not_before_ms,
            })
            .collect();
        let waits = graph.nodes.iter().map(|n| n.dependencies.len()).collect();
        // The edges grouped by the request waited for (a counting sort).
        let mut starts = vec![0usize; graph.nodes.len() + 1];
        for node in &graph.nodes {
            for edge in &node.dependencies {
                starts[edge.from + 1] += 1;
            }
        }
        for i in 0..graph.nodes.len() {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut edges = vec![(0, Trigger::Completion, 0.0); starts[graph.nodes.len()]];
        for (j, node) in graph.nodes.iter().enumerate() {
            for edge in &node.dependencies {
                edges[next[edge.from]] = (j, edge.trigger, edge.delay_ms);
                next[edge.from] += 1;
            }
        }
        Plan {
            steps,
            waits,
            starts,
            edges,
        }
    }

    /// `lllm-trace/1` sessions: each a chain from its first request's timestamp.
    fn of_sessions(sessions: &'t [Session], requests: usize) -> Plan<'t> {
        let mut plan = Plan {
            steps: Vec::with_capacity(requests),
            waits: Vec::with_capacity(requests),
            starts: Vec::with_capacity(requests + 1),
            edges: Vec::with_capacity(requests),
        };
        for session in sessions {
            for (r, request) in session.requests.iter().enumerate() {
                let i = plan.steps.len();
                plan.steps.push(Step {
                    session: &session.id,
                    request,
                    request_id: None,
                    play_id: None,
                    not_before_ms: if r == 0 {
                        request.timestamp as f64
                    } else {
                        0.0
                    },
                });
                plan.waits.push(usize::from(r > 0));
                plan.starts.push(plan.edges.len());
                if let Some(next) = session.requests.get(r + 1) {
                    plan.edges
                        .push((i + 1, Trigger::Completion, next.delay as f64));
                }
            }
        }
        plan.starts.push(plan.edges.len());
        plan
    }
}

/// Which steps are due when: a step is due once every step it waits for is done (answered, or sent
/// for a `dispatch` edge) plus the edge's delay, and not before its own start; times are divided by
/// the speed.
pub(super) struct Schedule<'p, 't> {
    plan: &'p Plan<'t>,
    speed: f64,
    /// How many steps each step still waits for.
    waits: Vec<usize>,
    /// The earliest each step may be sent, from the replay's start, as known so far.
    ready_at: Vec<Duration>,
    /// What is due next: (time from the start, step), earliest first.
    due: BinaryHeap<Reverse<(Duration, usize)>>,
}

impl<'p, 't> Schedule<'p, 't> {
    pub(super) fn new(plan: &'p Plan<'t>, speed: f64) -> Self {
        let waits = plan.waits.clone();
        let ready_at: Vec<Duration> = plan
            .steps
            .iter()
            .map(|s| scaled(s.not_before_ms, speed))
            .collect();
        let due = (0..plan.steps.len())
            .filter(|i| waits[*i] == 0)
            .map(|i| Reverse((ready_at[i], i)))
            .collect();
        Schedule {
            plan,
            speed,
            waits,
            ready_at,
            due,
        }
    }

    /// The step due next and when, if any step is due.
    pub(super) fn next(&self) -> Option<(Duration, usize)> {
        self.due.peek().map(|Reverse(entry)| *entry)
    }

    /// Takes the step [`next`](Self::next) gave off the schedule.
    pub(super) fn pop(&mut self) {
        self.due.pop();
    }

    /// Step `i` is done (`trigger`) at `now`: the steps waiting for that may become due.
    pub(super) fn release(&mut self, i: usize, trigger: Trigger, now: Duration) {
        let plan = self.plan;
        for &(j, on, delay) in &plan.edges[plan.starts[i]..plan.starts[i + 1]] {
            if on != trigger {
                continue;
            }
            self.ready_at[j] = self.ready_at[j].max(now.saturating_add(scaled(delay, self.speed)));
            self.waits[j] -= 1;
            if self.waits[j] == 0 {
                self.due.push(Reverse((self.ready_at[j], j)));
            }
        }
    }
}

/// `ms` of the recording (a fraction, as agentic traces may give) at `speed`, without overflow:
/// `ms` and `speed` are within their limits, and anything beyond a year and a day is cut there.
pub(super) fn scaled(ms: f64, speed: f64) -> Duration {
    const CEILING: Duration = Duration::from_secs(366 * 24 * 60 * 60);
    let secs = ms / 1000.0 / speed;
    if secs.is_nan() || secs <= 0.0 {
        // Nothing to wait (and NaN, from speeds the options refuse).
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).map_or(CEILING, |d| d.min(CEILING))
}
