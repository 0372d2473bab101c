//! The answer of a respond that went through tool rounds: the text of every round, in order, a
//! break between rounds where the text does not end a paragraph already.
//!
//! A model may say a sentence and then call a tool: that sentence has been streamed before anyone
//! knows a tool call follows, and text shown cannot be taken back. So the answer is every round's
//! text, and one rule makes it from streamed pieces and from a dialog alike: what a client was
//! streamed and what an unstreamed run answers are the same text.

use lllm_core::{Message, Role};

/// Collects an answer round by round.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    text: String,
    /// Whether the current round has shown text already (a break goes before its first piece only).
    round_open: bool,
}

impl Rounds {
    /// Adds `piece` of the current round's text; returns the break put before it (empty unless it
    /// is the first text of a round after earlier text).
    pub(crate) fn text(&mut self, piece: &str) -> &'static str {
        if piece.is_empty() {
            return "";
        }
        let separator = if self.round_open {
            ""
        } else {
            round_break(&self.text)
        };
        self.round_open = true;
        self.text.push_str(separator);
        self.text.push_str(piece);
        separator
    }

    /// The round ended in tool calls: the next text starts a new round.
    pub(crate) fn end_round(&mut self) {
        self.round_open = false;
    }

    /// The answer.
    pub(crate) fn into_answer(self) -> String {
        self.text
    }

    /// The answer of the respond that ends `messages`: the assistant messages after the last user
    /// message (the input), each a round.
    pub(crate) fn of_messages<'m>(
        messages: impl DoubleEndedIterator<Item = &'m Message>,
    ) -> String {
        let mut replies: Vec<&Message> = messages
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .collect();
        replies.reverse();
        let mut rounds = Rounds::default();
        for reply in replies {
            rounds.text(reply.text());
            rounds.end_round();
        }
        rounds.into_answer()
    }
}

/// What goes between the text so far and a new round's: nothing before the first words or after a
/// blank line, else what completes a blank line.
fn round_break(so_far: &str) -> &'static str {
    if so_far.trim().is_empty() || so_far.ends_with("\n\n") {
        ""
    } else if so_far.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}

#[cfg(test)]
mod tests {
    use super::Rounds;
    use lllm_core::{Message, ToolCall};

    fn streamed(rounds: &[&[&str]]) -> (String, String) {
        let mut collected = Rounds::default();
        let mut shown = String::new();
        for round in rounds {
            for piece in *round {
                shown.push_str(collected.text(piece));
                shown.push_str(piece);
            }
            collected.end_round();
        }
        (shown, collected.into_answer())
    }

    #[test]
    fn rounds_are_joined_by_a_blank_line_unless_they_end_a_paragraph_already() {
        let (shown, answer) = streamed(&[&["Let me ", "look."], &[], &["It is ", "4."]]);
        assert_eq!(answer, "Let me look.\n\nIt is 4.");
        assert_eq!(shown, answer);
        let (_, answer) = streamed(&[&["One.\n"], &["Two.\n\n"], &["Three."]]);
        assert_eq!(answer, "One.\n\nTwo.\n\nThree.");
        let (_, answer) = streamed(&[&["", "\n"], &["Only."]]);
        assert_eq!(answer, "\nOnly.");
    }

    #[test]
    fn a_dialog_gives_the_answer_the_stream_gave() {
        let call = ToolCall {
            id: "c1".into(),
            name: "add".into(),
            arguments: "{}".into(),
        };
        let mut asked = Message::assistant("Let me look.");
        asked.tool_calls = vec![call];
        let messages = [
            Message::user("earlier"),
            Message::assistant("old answer"),
            Message::user("2+2?"),
            asked,
            Message::tool("c1".to_owned(), "4".to_owned()),
            Message::assistant("It is 4."),
        ];
        let (shown, _) = streamed(&[&["Let me look."], &["It is 4."]]);
        assert_eq!(Rounds::of_messages(messages.iter()), shown);
    }
}
