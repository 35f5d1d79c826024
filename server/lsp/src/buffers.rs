//! The open buffers' syntax, worked out on one thread of its own and shared by every request.
//!
//! Edits go to the `lode-buffers` thread as they arrive; it takes everything queued at once,
//! so a burst of keystrokes costs one update per buffer (the newest text wins), brings each
//! buffer's [`Syntax`] up to date and publishes an [`Analysis`]: the version's tags (and
//! outline, made once on first use). A request waits for the analysis of the version it was sent after
//! (a few milliseconds) and never for the index's writer; if that takes longer than
//! [`PATIENCE`], it answers from the newest analysis there is.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lode_index::{FileTags, Language};
use parking_lot::Mutex;
use tokio::sync::watch;
use tower_lsp_server::lsp_types::{DocumentSymbol, Uri};
use tree_sitter::InputEdit;

use crate::document::Document;
use crate::outline::document_symbols;
use lode_syntax::live::Syntax;

/// How long a request waits for its version's analysis before taking the newest one.
pub const PATIENCE: Duration = Duration::from_secs(2);

/// What lode knows about one version of an open buffer.
#[derive(Debug)]
pub struct Analysis {
    pub document: Document,
    pub tags: FileTags,
    /// Why the buffer was not parsed (too large), to tell the user once.
    pub skipped: Option<String>,
    /// The outline, made by the first request that wants it (typing followed by symbol
    /// searches only never pays for it).
    outline: OnceLock<Vec<DocumentSymbol>>,
}

impl Analysis {
    pub fn new(document: Document, tags: FileTags, skipped: Option<String>) -> Analysis {
        Analysis {
            document,
            tags,
            skipped,
            outline: OnceLock::new(),
        }
    }

    pub fn version(&self) -> i32 {
        self.document.version()
    }

    /// The hierarchical outline (`textDocument/documentSymbol`) of this version.
    pub fn outline(&self) -> &[DocumentSymbol] {
        self.outline
            .get_or_init(|| document_symbols(&self.document, &self.tags))
    }
}

type Published = watch::Receiver<Option<Arc<Analysis>>>;

enum Message {
    Open {
        uri: Uri,
        language: Option<Language>,
        document: Document,
        publish: watch::Sender<Option<Arc<Analysis>>>,
    },
    Change {
        uri: Uri,
        document: Document,
        edits: Vec<InputEdit>,
    },
    Close {
        uri: Uri,
    },
}

/// The open buffers' analyses. Cheap to clone.
#[derive(Clone)]
pub struct Buffers {
    messages: mpsc::Sender<Message>,
    published: Arc<Mutex<HashMap<Uri, Published>>>,
}

impl Buffers {
    /// Starts the analysis thread. Buffers larger than `parse_limit` bytes are not parsed.
    pub fn start(parse_limit: usize) -> std::io::Result<Buffers> {
        let (messages, received) = mpsc::channel();
        std::thread::Builder::new()
            .name("lode-buffers".into())
            .spawn(move || Worker::new(parse_limit).run(received))?;
        Ok(Buffers {
            messages,
            published: Arc::default(),
        })
    }

    /// The editor opened a buffer (or opened it again: it starts over).
    pub fn open(&self, uri: Uri, language: Option<Language>, document: Document) {
        let (publish, published) = watch::channel(None);
        self.published.lock().insert(uri.clone(), published);
        self.send(Message::Open {
            uri,
            language,
            document,
            publish,
        });
    }

    /// The buffer is now `document`, reached from the last one by `edits`.
    pub fn change(&self, uri: Uri, document: Document, edits: Vec<InputEdit>) {
        self.send(Message::Change {
            uri,
            document,
            edits,
        });
    }

    pub fn close(&self, uri: &Uri) {
        self.published.lock().remove(uri);
        self.send(Message::Close { uri: uri.clone() });
    }

    /// The analysis of `version` (or a newer one) of an open buffer; after [`PATIENCE`] the
    /// newest there is. `None` when the buffer is not open (or nothing is analysed yet).
    pub async fn analysis(&self, uri: &Uri, version: i32) -> Option<Arc<Analysis>> {
        let mut published = self.published.lock().get(uri)?.clone();
        let reached = |analysis: &Option<Arc<Analysis>>| {
            analysis
                .as_ref()
                .is_some_and(|analysis| analysis.version() >= version)
        };
        let waited = tokio::time::timeout(PATIENCE, published.wait_for(reached))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|analysis| analysis.clone());
        waited.or_else(|| published.borrow().clone())
    }

    fn send(&self, message: Message) {
        if self.messages.send(message).is_err() {
            tracing::error!("the buffer analysis thread stopped; outlines no longer follow edits");
        }
    }
}

/// One open buffer on the analysis thread.
struct Buffer {
    language: Option<Language>,
    document: Document,
    /// `None` until parsed, for plain text, or while the buffer is too large.
    syntax: Option<Syntax>,
    /// Edits since `syntax` was last brought up to date.
    edits: Vec<InputEdit>,
    /// Parse from scratch at the next update.
    reparse: bool,
    publish: watch::Sender<Option<Arc<Analysis>>>,
}

struct Worker {
    parse_limit: usize,
    buffers: HashMap<Uri, Buffer>,
}

impl Worker {
    fn new(parse_limit: usize) -> Worker {
        Worker {
            parse_limit,
            buffers: HashMap::new(),
        }
    }

    fn run(mut self, messages: mpsc::Receiver<Message>) {
        while let Ok(first) = messages.recv() {
            // Everything queued now is one batch: each buffer is brought up to date once.
            let mut touched: Vec<Uri> = Vec::new();
            for message in std::iter::once(first).chain(messages.try_iter()) {
                if let Some(uri) = self.take(message)
                    && !touched.contains(&uri)
                {
                    touched.push(uri);
                }
            }
            for uri in touched {
                if let Some(buffer) = self.buffers.get_mut(&uri) {
                    let analysis = update(buffer, self.parse_limit);
                    buffer.publish.send_replace(Some(Arc::new(analysis)));
                }
            }
        }
    }

    /// Records a message; returns the buffer that needs an update.
    fn take(&mut self, message: Message) -> Option<Uri> {
        match message {
            Message::Open {
                uri,
                language,
                document,
                publish,
            } => {
                self.buffers.insert(
                    uri.clone(),
                    Buffer {
                        language,
                        document,
                        syntax: None,
                        edits: Vec::new(),
                        reparse: true,
                        publish,
                    },
                );
                Some(uri)
            }
            Message::Change {
                uri,
                document,
                edits,
            } => {
                let buffer = self.buffers.get_mut(&uri)?;
                buffer.document = document;
                buffer.edits.extend(edits);
                Some(uri)
            }
            Message::Close { uri } => {
                self.buffers.remove(&uri);
                None
            }
        }
    }
}

/// Brings one buffer's syntax to its newest text and derives what requests need.
fn update(buffer: &mut Buffer, parse_limit: usize) -> Analysis {
    let document = buffer.document.clone();
    let edits = std::mem::take(&mut buffer.edits);
    if document.text().len() > parse_limit {
        buffer.syntax = None;
        buffer.reparse = true;
        let reason = format!(
            "lode: this buffer is {} bytes, over the {parse_limit}-byte limit for outlines and symbols; it is not parsed or indexed while it is that large",
            document.text().len()
        );
        return Analysis::new(document, FileTags::default(), Some(reason));
    }
    let Some(language) = buffer.language else {
        return Analysis::new(document, FileTags::default(), None);
    };
    let followed = match (&mut buffer.syntax, buffer.reparse) {
        (Some(syntax), false) => syntax
            .edit(&edits, document.text(), document.line_starts())
            .is_ok(),
        _ => false,
    };
    if !followed {
        buffer.syntax = match Syntax::parse(language, document.text()) {
            Ok(syntax) => syntax,
            Err(error) => {
                tracing::warn!(%error, "cannot parse a buffer");
                None
            }
        };
    }
    buffer.reparse = buffer.syntax.is_none();
    let tags = buffer
        .syntax
        .as_ref()
        .map(|syntax| syntax.tags().clone())
        .unwrap_or_default();
    Analysis::new(document, tags, None)
}
