// The lode extension: starts `lode lsp` over stdio through vscode-languageclient, so VS Code
// gets lode's workspace symbols, outline, definitions, references and code actions; adds palette
// and context-menu commands for the agent's actions; contributes the @lode chat participant,
// which talks ACP to `lode acp` (chat/participant.ts); and logs to the "lode" output channel.

import * as vscode from "vscode";
import {
  CodeActionRequest,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

import { ActionLike, COMMANDS, LodeCommand, pickAction, serverCommand } from "./actions";
import { registerChat } from "./chat/register";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("lode", { log: true });
  context.subscriptions.push(output);
  for (const command of COMMANDS) {
    context.subscriptions.push(vscode.commands.registerCommand(command.id, () => runAction(command)));
  }
  context.subscriptions.push(
    vscode.commands.registerCommand("lode.client.restart", restart),
    vscode.commands.registerCommand("lode.client.showOutput", () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("lode.path") || event.affectsConfiguration("lode.extraArgs")) {
        void restart();
      }
    }),
  );
  // The @lode chat participant talks to `lode acp`, a process of its own (hosts without the
  // Chat API get the language server only).
  if (typeof vscode.chat?.createChatParticipant === "function") {
    registerChat(context, output);
  }
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

async function start(): Promise<void> {
  const settings = vscode.workspace.getConfiguration("lode");
  const server = serverCommand(settings.get("path"), settings.get("extraArgs"));
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannel: output,
    traceOutputChannel: output,
  };
  // The id "lode" makes the client read the `lode.trace.server` setting.
  client = new LanguageClient("lode", "lode", serverOptions, clientOptions);
  output.appendLine(`starting ${server.command} ${server.args.join(" ")}`);
  try {
    await client.start();
  } catch (error) {
    output.appendLine(`lode lsp did not start: ${String(error)}`);
    const choice = await vscode.window.showErrorMessage(
      `lode: cannot start \`${server.command} lsp\` (set lode.path): ${String(error)}`,
      "Show output",
    );
    if (choice) {
      output.show(true);
    }
  }
}

async function restart(): Promise<void> {
  await deactivate();
  await start();
}

/** Runs one of the agent's code actions on the active editor's selection. */
async function runAction(command: LodeCommand): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage(`${command.title}: open a file first`);
    return;
  }
  if (!client || !client.isRunning()) {
    void vscode.window.showWarningMessage(`${command.title}: lode lsp is not running (see the lode output)`);
    return;
  }
  const document = editor.document;
  const selection = editor.selection;
  const here = vscode.languages
    .getDiagnostics(document.uri)
    .filter((d) => d.range.contains(selection.active) || d.range.intersection(selection) !== undefined);
  let message: string | undefined;
  if (command.needsDiagnostic) {
    if (here.length === 0) {
      void vscode.window.showInformationMessage(`${command.title}: no diagnostic under the cursor`);
      return;
    }
    message = here[0].message;
    if (here.length > 1) {
      const picked = await vscode.window.showQuickPick(
        here.map((d) => d.message),
        { placeHolder: "Which diagnostic?" },
      );
      if (picked === undefined) {
        return;
      }
      message = picked;
    }
  }
  const context = await client.code2ProtocolConverter.asCodeActionContext({
    diagnostics: here,
    only: undefined,
    triggerKind: vscode.CodeActionTriggerKind.Invoke,
  });
  const actions = (await client.sendRequest(CodeActionRequest.type, {
    textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
    range: client.code2ProtocolConverter.asRange(selection),
    context,
  })) as ActionLike[] | null;
  const invocation = pickAction(actions ?? [], command.server, message);
  if (!invocation) {
    void vscode.window.showInformationMessage(`lode does not offer "${command.title}" here`);
    return;
  }
  output.appendLine(`${command.title}: ${document.uri.fsPath}:${selection.active.line + 1}`);
  // Answered when the turn is over; the edit arrives as workspace/applyEdit meanwhile, and the
  // progress notification has a cancel button.
  await client.sendRequest(ExecuteCommandRequest.type, invocation);
}
