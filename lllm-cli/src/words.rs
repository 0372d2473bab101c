//! The command's words in the library's errors. The library says what is wrong in its own terms
//! (`the speed 0 is out of range`, `a chat needs an input`); where the fix is a flag or a command,
//! the command says which: each error it knows is found by its type in the chain and its message
//! said again in the command's words.

use std::error::Error;
use std::path::Path;

use lllm_runtime::batch::BatchError;
use lllm_runtime::config::PromptError;
use lllm_runtime::journal::JournalError;
use lllm_runtime::queue::QueueError;
use lllm_runtime::replay::ReplayError;
use lllm_runtime::tactic::TacticError;
use lllm_runtime::RunError;

/// How the command words one error of the library.
enum Worded {
    /// Its message, said the command's way instead.
    Instead(String),
    /// Words added after the whole message (after the causes the library's message leads to).
    After(String),
}

/// `error` and its causes on one line (as `{error:#}` prints them), each error the command knows
/// said in the command's words.
pub(crate) fn in_command_words(error: &anyhow::Error) -> String {
    let mut text = format!("{error:#}");
    let mut after = String::new();
    for cause in error.chain() {
        match worded(cause) {
            Some(Worded::Instead(words)) => text = text.replacen(&cause.to_string(), &words, 1),
            Some(Worded::After(words)) => after.push_str(&words),
            None => {}
        }
    }
    text + &after
}

fn worded(cause: &(dyn Error + 'static)) -> Option<Worded> {
    if let Some(error) = cause.downcast_ref::<RunError>() {
        // Transparent: the error inside is not a cause of its own.
        return match error {
            RunError::JournalOpen(error) => journal(error).map(Worded::Instead),
            RunError::Tactic(error) => tactic(error),
            _ => None,
        };
    }
    if let Some(error) = cause.downcast_ref::<QueueError>() {
        return match error {
            QueueError::Connect { .. } => Some(Worded::After(
                "; is it running (scripts/servers/nats.sh up)?".to_owned(),
            )),
            QueueError::Output(error) => batch(error).map(Worded::Instead),
            _ => None,
        };
    }
    if let Some(error) = cause.downcast_ref::<ReplayError>() {
        return replay(error).map(Worded::Instead);
    }
    if let Some(error) = cause.downcast_ref::<TacticError>() {
        return tactic(error);
    }
    if let Some(error) = cause.downcast_ref::<JournalError>() {
        return journal(error).map(Worded::Instead);
    }
    if let Some(error) = cause.downcast_ref::<BatchError>() {
        return batch(error).map(Worded::Instead);
    }
    prompt(cause.downcast_ref::<PromptError>()?)
}

fn tactic(error: &TacticError) -> Option<Worded> {
    match error {
        TacticError::NoInput => Some(Worded::Instead(
            "a chat needs an input: pass --input TEXT or pipe it on standard input".to_owned(),
        )),
        TacticError::Template { problem, .. } => prompt(problem),
        _ => None,
    }
}

/// A template's variable that was not given, with the flag that gives it.
fn prompt(error: &PromptError) -> Option<Worded> {
    let PromptError::MissingVariable { variables, .. } = error else {
        return None;
    };
    let name = variables.first().map_or("NAME", String::as_str);
    Some(Worded::After(format!(" (`--var {name}=...`)")))
}

/// An output another batch writes, named by the command that writes it.
fn batch(error: &BatchError) -> Option<String> {
    let BatchError::Busy { path } = error else {
        return None;
    };
    Some(format!(
        "{} is being written by another lllm batch: one output has one writer at a time; wait for \
         that batch to end",
        path.display()
    ))
}

/// A replay's option named by its flag.
fn replay(error: &ReplayError) -> Option<String> {
    let (subject, flag) = match error {
        ReplayError::ApiBase { .. } => ("the API base", "--api-base"),
        ReplayError::NoModel => ("the model", "--model"),
        ReplayError::Speed { .. } => ("the speed", "--speed"),
        ReplayError::BlockSize { .. } => ("the block size", "--block-size"),
        _ => return None,
    };
    let message = error.to_string();
    Some(match message.strip_prefix(subject) {
        Some(rest) => format!("{flag}{rest}"),
        None => format!("{flag}: {message}"),
    })
}

/// A journal that another run holds or that already exists, with the command that resumes it.
fn journal(error: &JournalError) -> Option<String> {
    let file = |path: &Path| path.display().to_string();
    match error {
        JournalError::Exists { path } => Some(format!(
            "{} already holds a journal: resume it with `lllm resume {}`, or give another file",
            file(path),
            file(path)
        )),
        JournalError::Busy { path } => Some(format!(
            "{} is in use by another run (lllm run or lllm resume of it): one journal has one \
             runner at a time; wait for that run to end",
            file(path)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_option_is_named_by_its_flag() {
        let error = anyhow::Error::new(ReplayError::Speed { speed: 0.0 });
        let text = in_command_words(&error);
        assert!(
            text.starts_with("--speed 0 is out of range; use a number from"),
            "{text}"
        );
        let error = anyhow::Error::new(ReplayError::NoModel).context("trace.jsonl");
        assert_eq!(
            in_command_words(&error),
            "trace.jsonl: --model is empty; name the model to ask"
        );
    }

    #[test]
    fn a_chat_without_input_says_which_flag_gives_one() {
        let error = anyhow::Error::new(TacticError::NoInput);
        assert_eq!(
            in_command_words(&error),
            "a chat needs an input: pass --input TEXT or pipe it on standard input"
        );
    }

    #[test]
    fn an_unreachable_queue_says_how_to_start_one_after_its_cause() {
        let error = QueueError::Connect {
            server: "nats://127.0.0.1:1".into(),
            source: "connection refused".into(),
        };
        // The library keeps the client's error as the source, not as text in its message.
        assert_eq!(
            Error::source(&error).map(ToString::to_string).as_deref(),
            Some("connection refused")
        );
        assert_eq!(
            in_command_words(&anyhow::Error::new(error)),
            "cannot reach the NATS server at nats://127.0.0.1:1: connection refused; is it running \
             (scripts/servers/nats.sh up)?"
        );
    }

    #[test]
    fn a_busy_journal_or_output_names_the_command_that_holds_it() {
        let path = std::path::PathBuf::from("run.jsonl");
        let error = RunError::JournalOpen(JournalError::Exists { path: path.clone() });
        assert_eq!(
            in_command_words(&anyhow::Error::new(error)),
            "run.jsonl already holds a journal: resume it with `lllm resume run.jsonl`, or give \
             another file"
        );
        let error = QueueError::Output(BatchError::Busy { path });
        assert!(in_command_words(&anyhow::Error::new(error))
            .starts_with("run.jsonl is being written by another lllm batch: "),);
    }

    #[test]
    fn an_error_the_command_does_not_know_is_printed_as_it_is() {
        let error = anyhow::anyhow!("the speed of light");
        assert_eq!(in_command_words(&error), "the speed of light");
    }
}
