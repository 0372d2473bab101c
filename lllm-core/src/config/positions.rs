//! Where each node of a YAML document is: a map from field paths (`steps[2].parallel[0].agent`) to the
//! file, line and column, so that errors found after parsing can still point at their line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use super::error::Position;

/// The positions of the nodes of one document (or of a document merged over its `base:`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Positions {
    nodes: HashMap<String, (PathBuf, Position, bool)>,
}

impl Positions {
    /// Indexes `text` as read from `file`. A document that does not parse gives an empty index (the
    /// parser's own error is reported elsewhere).
    pub(crate) fn of(text: &str, file: &Path) -> Positions {
        let mut recorder = Recorder {
            file: file.to_owned(),
            frames: Vec::new(),
            nodes: HashMap::new(),
        };
        let mut parser = Parser::new_from_str(text);
        if parser.load(&mut recorder, false).is_err() {
            return Positions::default();
        }
        Positions {
            nodes: recorder.nodes,
        }
    }

    /// The file and position of `path`, or of its nearest ancestor that has one.
    pub(crate) fn get(&self, path: &str) -> Option<(&Path, Position)> {
        let mut current = path;
        loop {
            if let Some((file, position, _)) = self.nodes.get(current) {
                return Some((file.as_path(), *position));
            }
            current = parent(current)?;
        }
    }

    /// The file that holds `path` itself (no fallback to an ancestor).
    pub(crate) fn file_of(&self, path: &str) -> Option<&Path> {
        self.nodes.get(path).map(|(file, _, _)| file.as_path())
    }

    /// These positions (a base document's) with `child`'s over them: where the child replaces a list or
    /// a value, nothing below it is kept from the base.
    pub(crate) fn overlay(mut self, child: Positions) -> Positions {
        let replaced: Vec<&String> = child
            .nodes
            .iter()
            .filter(|(_, (_, _, is_mapping))| !is_mapping)
            .map(|(path, _)| path)
            .collect();
        self.nodes.retain(|path, _| {
            !replaced.iter().any(|r| {
                path.strip_prefix(r.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
            })
        });
        self.nodes.extend(child.nodes);
        self
    }
}

/// `a.b[2].c` → `a.b[2]` → `a.b` → `a` → none.
fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = path.rfind(['.', '[']).unwrap_or(0);
    Some(&path[..cut])
}

enum Frame {
    Mapping {
        path: String,
        key: Option<String>,
        /// The mapping has no position yet: it gets its first key's (a block mapping's own mark is
        /// where the parser noticed it, past the first key).
        unplaced: bool,
    },
    Sequence {
        path: String,
        next: usize,
    },
}

struct Recorder {
    file: PathBuf,
    frames: Vec<Frame>,
    nodes: HashMap<String, (PathBuf, Position, bool)>,
}

impl Recorder {
    fn record(&mut self, path: &str, mark: Marker, is_mapping: bool) {
        let position = Position {
            line: mark.line(),
            column: mark.col() + 1,
        };
        self.nodes
            .entry(path.to_owned())
            .and_modify(|entry| entry.2 = is_mapping)
            .or_insert((self.file.clone(), position, is_mapping));
    }

    /// The path of the node starting now, or `None` when it is a mapping key (recorded as such).
    fn node_path(&mut self, key_text: Option<&str>, mark: Marker) -> Option<String> {
        let (path, is_key) = match self.frames.last_mut() {
            None => (String::new(), false),
            Some(Frame::Mapping {
                path,
                key,
                unplaced,
            }) => match key.take() {
                None => {
                    let name = key_text.unwrap_or("?");
                    let full = join(path, name);
                    *key = Some(name.to_owned());
                    if std::mem::take(unplaced) {
                        let mapping = path.clone();
                        self.record(&mapping, mark, true);
                    }
                    (full, true)
                }
                Some(name) => (join(path, &name), false),
            },
            Some(Frame::Sequence { path, next }) => {
                let full = format!("{path}[{next}]");
                *next += 1;
                (full, false)
            }
        };
        if is_key {
            // A key's position is where errors about its value point.
            self.record(&path, mark, false);
            None
        } else {
            Some(path)
        }
    }
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

impl MarkedEventReceiver for Recorder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, ..) => {
                if let Some(path) = self.node_path(Some(&text), mark) {
                    self.record(&path, mark, false);
                }
            }
            Event::Alias(_) => {
                if let Some(path) = self.node_path(None, mark) {
                    self.record(&path, mark, false);
                }
            }
            Event::MappingStart(..) => {
                if let Some(path) = self.node_path(None, mark) {
                    let unplaced = !self.nodes.contains_key(&path);
                    if !unplaced {
                        self.record(&path, mark, true);
                    }
                    self.frames.push(Frame::Mapping {
                        path,
                        key: None,
                        unplaced,
                    });
                }
            }
            Event::SequenceStart(..) => {
                if let Some(path) = self.node_path(None, mark) {
                    self.record(&path, mark, false);
                    self.frames.push(Frame::Sequence { path, next: 0 });
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.frames.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(positions: &Positions, path: &str) -> Option<(usize, usize)> {
        positions.get(path).map(|(_, p)| (p.line, p.column))
    }

    #[test]
    fn indexes_keys_and_list_items() {
        let text = "agent_configs:\n  - name: a\n    model_name: m\nsteps:\n  - agent: a\n  - parallel:\n      - {agent: a, dialog: x}\n      - steps:\n          - agent: b\n";
        let p = Positions::of(text, Path::new("t.yaml"));
        assert_eq!(at(&p, "agent_configs[0].model_name"), Some((3, 5)));
        assert_eq!(at(&p, "steps[0].agent"), Some((5, 5)));
        assert_eq!(at(&p, "steps[1].parallel[0].dialog"), Some((7, 20)));
        assert_eq!(at(&p, "steps[1].parallel[1].steps[0].agent"), Some((9, 13)));
        assert_eq!(
            at(&p, "steps[1].parallel[0].missing"),
            Some((7, 10)),
            "falls back to the item"
        );
        assert_eq!(at(&p, "steps[1]"), Some((6, 5)));
    }

    #[test]
    fn an_overlay_replaces_lists_whole() {
        let base = Positions::of(
            "steps:\n  - agent: a\n  - agent: b\nglobal:\n  model_name: m\n",
            Path::new("base.yaml"),
        );
        let child = Positions::of("steps:\n  - agent: c\n", Path::new("child.yaml"));
        let merged = base.overlay(child);
        let (file, position) = merged.get("steps[0].agent").expect("kept");
        assert_eq!((file, position.line), (Path::new("child.yaml"), 2));
        assert_eq!(
            merged.get("steps[1].agent").map(|(f, _)| f),
            Some(Path::new("child.yaml")),
            "falls back to child's steps"
        );
        assert_eq!(
            merged.get("global.model_name").map(|(f, _)| f),
            Some(Path::new("base.yaml"))
        );
    }
}
