//! Tool calls and their results go together: every call an assistant message makes is answered by
//! a tool message right after it, and no tool message answers a call that is not there. Servers
//! refuse a request that breaks this (HTTP 400), so lllm checks every request it sends, and cuts a
//! compacted window's tail only where it holds.

use std::collections::HashSet;

use crate::message::{Message, Role};

/// Where a list of messages breaks the pairing of tool calls and results.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PairingProblem {
    /// A tool call has no result before the next non-tool message (or the end).
    #[error("message {at}: the tool call `{call}` is not answered by a tool message after it")]
    Unanswered {
        /// The index of the assistant message that made the call.
        at: usize,
        /// The call's id.
        call: String,
    },
    /// A tool message answers no call of the assistant message before it.
    #[error("message {at}: a tool result for `{call}`, which no assistant message just before it called")]
    Orphan {
        /// The index of the tool message.
        at: usize,
        /// The id it answers.
        call: String,
    },
}

/// The first place `messages` break the pairing, if any.
pub fn pairing_problem<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Option<PairingProblem> {
    // The calls of the latest assistant message still waiting for their results, and where it is.
    let mut open: HashSet<&str> = HashSet::new();
    let mut opened_at = 0;
    for (at, message) in messages.into_iter().enumerate() {
        if message.role == Role::Tool {
            let call = message.tool_call_id.as_deref().unwrap_or_default();
            if !open.remove(call) {
                return Some(PairingProblem::Orphan {
                    at,
                    call: call.to_owned(),
                });
            }
            continue;
        }
        if let Some(call) = open.iter().next() {
            return Some(PairingProblem::Unanswered {
                at: opened_at,
                call: (*call).to_owned(),
            });
        }
        if message.role == Role::Assistant && !message.tool_calls.is_empty() {
            open = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
            opened_at = at;
        }
    }
    open.iter().next().map(|call| PairingProblem::Unanswered {
        at: opened_at,
        call: (*call).to_owned(),
    })
}

/// Where to start a tail of about `keep` messages of `messages[first..]` without cutting a tool
/// call from its results: the index `keep` from the end, moved back over tool results to the
/// assistant message that called them. Never before `first`.
pub fn pair_safe_tail_start(messages: &[Message], first: usize, keep: usize) -> usize {
    let mut start = messages.len().saturating_sub(keep).max(first);
    while start > first && messages.get(start).is_some_and(|m| m.role == Role::Tool) {
        start -= 1;
    }
    // A tail that starts with results whose call is before `first` cannot be kept whole: drop them.
    while messages.get(start).is_some_and(|m| m.role == Role::Tool) {
        start += 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(ids: &[&str]) -> Message {
        let mut message = Message::assistant("");
        message.tool_calls = ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).to_owned(),
                name: "t".into(),
                arguments: "{}".into(),
            })
            .collect();
        message
    }

    #[test]
    fn calls_and_results_must_go_together() {
        let good = [
            Message::system("s"),
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool("b", "rb"),
            Message::tool("a", "ra"),
            Message::assistant("done"),
        ];
        assert_eq!(pairing_problem(&good), None);
        let unanswered = [Message::user("u"), call(&["a"]), Message::user("next")];
        assert_eq!(
            pairing_problem(&unanswered),
            Some(PairingProblem::Unanswered {
                at: 1,
                call: "a".into()
            })
        );
        let at_end = [Message::user("u"), call(&["a"])];
        assert!(pairing_problem(&at_end).is_some());
        let orphan = [Message::user("u"), Message::tool("x", "r")];
        assert_eq!(
            pairing_problem(&orphan),
            Some(PairingProblem::Orphan {
                at: 1,
                call: "x".into()
            })
        );
        let twice = [
            call(&["a"]),
            Message::tool("a", "r"),
            Message::tool("a", "r"),
        ];
        assert!(pairing_problem(&twice).is_some());
    }

    #[test]
    fn a_tail_never_starts_inside_a_tool_round() {
        let messages = [
            Message::system("s"),
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool("a", "ra"),
            Message::tool("b", "rb"),
            Message::assistant("done"),
        ];
        // Two from the end would start at `rb`: moved back to the call.
        assert_eq!(pair_safe_tail_start(&messages, 1, 2), 2);
        assert_eq!(pair_safe_tail_start(&messages, 1, 1), 5);
        assert_eq!(pair_safe_tail_start(&messages, 1, 100), 1);
        assert_eq!(
            pairing_problem(&messages[pair_safe_tail_start(&messages, 1, 3)..]),
            None
        );
        // Results whose call lies before `first` are dropped instead.
        assert_eq!(pair_safe_tail_start(&messages, 3, 3), 5);
    }
}
