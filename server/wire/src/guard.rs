//! The stdio guard of `lode lsp` and `lode mcp`: it sits between the real input/output and a
//! protocol library, reads the client's frames with a size cap, lets the protocol's [`Gate`]
//! forward, answer or drop each one, and writes the library's messages and the gate's answers
//! to the output whole, one writer for both.

use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, BufReader, DuplexStream};
use tokio::sync::mpsc;

use crate::{Frame, Framing};

/// Size of the in-process pipes between the guard and the protocol library.
const PIPE_BYTES: usize = 256 * 1024;

/// Messages queued between the guard and the protocol library (the guard waits beyond this,
/// so a flooding client is slowed down rather than buffered without bound).
const FORWARD_QUEUE: usize = 64;

/// The protocol's half of a guard: what to do with each frame the client sends.
pub trait Gate: Send + Sync + 'static {
    /// One frame from the client: forward it, answer it or drop it through `doors`. Returning
    /// `Break` ends the input (the protocol library has stopped).
    fn incoming(&self, frame: Frame, doors: &Doors)
    -> impl Future<Output = ControlFlow<()>> + Send;

    /// One message from the protocol library, just before it is written to the output (and
    /// before any answer queued after this call).
    fn outgoing(&self, _message: &[u8]) {}

    /// Reading the client's input failed; the input counts as ended.
    fn input_failed(&self, _error: &std::io::Error) {}
}

/// The protocol library has stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the protocol library has stopped reading")]
pub struct Stopped;

/// Where a [`Gate`] sends what it lets through and what it answers itself. Cloneable, so an
/// answer may be worked out in a task of its own.
#[derive(Clone)]
pub struct Doors {
    forward: mpsc::Sender<Vec<u8>>,
    answers: mpsc::UnboundedSender<Vec<u8>>,
}

impl Doors {
    /// Passes one message body to the protocol library (framed as the guard's framing), waiting
    /// while the queue to it is full.
    pub async fn forward(&self, body: Vec<u8>) -> Result<(), Stopped> {
        self.forward.send(body).await.map_err(|_| Stopped)
    }

    /// Answers the client directly with one message body; it is written whole, between the
    /// library's messages.
    pub fn answer(&self, body: Vec<u8>) {
        // The writer has stopped only when the output is gone: nobody is left to answer.
        let _ = self.answers.send(body);
    }
}

/// The two ends the protocol library reads and writes, and the tasks that connect them to the
/// real input and output. Dropping the real input's end closes the library's input.
pub struct GuardedPipes {
    pub server_input: DuplexStream,
    pub server_output: DuplexStream,
    pub input_task: tokio::task::JoinHandle<()>,
    pub output_task: tokio::task::JoinHandle<()>,
}

/// Puts a guard between `input`/`output` and a protocol library: the client's frames (in
/// `framing`, at most `limit` bytes each) go through `gate`; the library's frames go out as
/// they are. When the library's output ends, the answers already queued are written and the
/// output task ends.
pub fn guard<I, O, G>(input: I, output: O, framing: Framing, limit: usize, gate: G) -> GuardedPipes
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    G: Gate,
{
    let (mut to_server, server_input) = tokio::io::duplex(PIPE_BYTES);
    let (server_output, from_server) = tokio::io::duplex(PIPE_BYTES);
    let (answers, answer_queue) = mpsc::unbounded_channel::<Vec<u8>>();
    let (forward, mut forwarded) = mpsc::channel::<Vec<u8>>(FORWARD_QUEUE);
    let gate = Arc::new(gate);

    let forward_task = tokio::spawn(async move {
        while let Some(body) = forwarded.recv().await {
            if framing.write(&mut to_server, &body).await.is_err() {
                break; // the library has stopped
            }
        }
        // Dropping `to_server` tells the library its input ended.
    });

    let input_gate = gate.clone();
    let input_task = tokio::spawn(async move {
        let doors = Doors { forward, answers };
        let mut input = BufReader::new(input);
        loop {
            let frame = match framing.read(&mut input, limit).await {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    input_gate.input_failed(&error);
                    break;
                }
            };
            if input_gate.incoming(frame, &doors).await.is_break() {
                break;
            }
        }
        // The forwarder ends once every sender (this loop's and any the gate still holds) is
        // gone.
        drop(doors);
        let _ = forward_task.await;
    });

    let output_task = tokio::spawn(write_output(
        output,
        BufReader::new(from_server),
        answer_queue,
        framing,
        gate,
    ));

    GuardedPipes {
        server_input,
        server_output,
        input_task,
        output_task,
    }
}

/// The one writer of the output: the library's frames and the gate's answers, each whole.
async fn write_output<O, G>(
    mut output: O,
    from_server: BufReader<DuplexStream>,
    mut answer_queue: mpsc::UnboundedReceiver<Vec<u8>>,
    framing: Framing,
    gate: Arc<G>,
) where
    O: AsyncWrite + Unpin + Send + 'static,
    G: Gate,
{
    // Reading a frame is not cancel-safe, so the read in progress is kept across the loop (an
    // answer written meanwhile does not lose the bytes it had read) and owns the reader.
    async fn next_frame(
        mut reader: BufReader<DuplexStream>,
        framing: Framing,
    ) -> (BufReader<DuplexStream>, std::io::Result<Option<Frame>>) {
        let frame = framing.read(&mut reader, usize::MAX).await;
        (reader, frame)
    }
    let mut reading = std::pin::pin!(next_frame(from_server, framing));
    let mut answers_open = true;
    loop {
        tokio::select! {
            (reader, frame) = &mut reading => {
                match frame {
                    Ok(Some(Frame::Message(body))) => {
                        gate.outgoing(&body);
                        if framing.write(&mut output, &body).await.is_err() {
                            return;
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
                reading.set(next_frame(reader, framing));
            }
            answer = answer_queue.recv(), if answers_open => {
                match answer {
                    Some(body) => {
                        if framing.write(&mut output, &body).await.is_err() {
                            return;
                        }
                    }
                    None => answers_open = false,
                }
            }
        }
    }
    // The library has finished: write the answers it left behind.
    while let Ok(body) = answer_queue.try_recv() {
        if framing.write(&mut output, &body).await.is_err() {
            break;
        }
    }
}
