// The parts of the extension that do not need VS Code: which server command each palette
// command runs, how `lode lsp` is started from the settings, and which of the server's code
// actions a palette command means. Unit-tested with plain node (src/test/actions.test.ts).

/** A palette command of the extension and the `workspace/executeCommand` it runs. */
export interface LodeCommand {
  /** The VS Code command id (the server's own ids are registered by the language client). */
  id: string;
  /** The server command (`server/lsp/src/actions.rs`). */
  server: string;
  title: string;
  /** Whether it needs a diagnostic under the cursor. */
  needsDiagnostic: boolean;
}

export const COMMANDS: readonly LodeCommand[] = [
  { id: "lode.client.fix", server: "lode.fix", title: "lode: fix this diagnostic", needsDiagnostic: true },
  { id: "lode.client.explain", server: "lode.explain", title: "lode: explain", needsDiagnostic: false },
  {
    id: "lode.client.writeTest",
    server: "lode.writeTest",
    title: "lode: write a test for this function",
    needsDiagnostic: false,
  },
  { id: "lode.client.document", server: "lode.document", title: "lode: document this", needsDiagnostic: false },
  { id: "lode.client.review", server: "lode.review", title: "lode: review", needsDiagnostic: false },
];

/** How `lode lsp` is started. */
export interface ServerCommand {
  command: string;
  args: string[];
}

/** The server command line from the settings `lode.path` and `lode.extraArgs`. */
export function serverCommand(path: unknown, extraArgs: unknown): ServerCommand {
  const command = typeof path === "string" && path.trim() !== "" ? path.trim() : "lode";
  const extra = Array.isArray(extraArgs) ? extraArgs.filter((a): a is string => typeof a === "string") : [];
  return { command, args: ["lsp", ...extra] };
}

/** The shape of a code action or command as the server sends it (LSP JSON). */
export interface ActionLike {
  title?: string;
  command?: string | { command: string; arguments?: unknown[] };
  arguments?: unknown[];
  diagnostics?: { message?: string }[];
}

/** The server command and its arguments to run. */
export interface Invocation {
  command: string;
  arguments: unknown[];
}

/**
 * Picks the server's code action for a palette command: the one running `server`; for a fix,
 * the one about the diagnostic with `message` when given (else the first fix). `undefined`
 * when the server did not offer it here (e.g. "write a test" outside a definition).
 */
export function pickAction(actions: readonly ActionLike[], server: string, message?: string): Invocation | undefined {
  const invocations: { invocation: Invocation; messages: string[] }[] = [];
  for (const action of actions) {
    const nested = typeof action.command === "object" ? action.command : undefined;
    const command = nested ? nested.command : action.command;
    const args = nested ? nested.arguments : action.arguments;
    if (command !== server) {
      continue;
    }
    const messages = (action.diagnostics ?? []).map((d) => d.message ?? "");
    invocations.push({ invocation: { command, arguments: args ?? [] }, messages });
  }
  if (message !== undefined) {
    const exact = invocations.find((i) => i.messages.includes(message));
    if (exact) {
      return exact.invocation;
    }
  }
  return invocations[0]?.invocation;
}
