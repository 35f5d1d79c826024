// Wires lode's chat into VS Code: the @lode participant and its permission command
// (participant.ts), and lode's models in VS Code's model picker (models.ts), which current VS Code
// needs before it hands `@lode` any request. On a VS Code older than the model-provider API
// (1.104), the participant still registers (it answers wherever VS Code has some model, such as
// Copilot's), and the user is told once what to do.

import * as vscode from "vscode";

import { providerApi } from "./lmApi";
import { registerModels } from "./models";
import { ANSWER_COMMAND, LodeChat, MODEL_VENDOR, PARTICIPANT_ID } from "./participant";

/** The first VS Code with `vscode.lm.registerLanguageModelChatProvider`. */
export const PROVIDER_API_SINCE = "1.104";
const NOTICE_SHOWN_KEY = "lode.chat.oldVsCodeNotice";

/** What an older VS Code user is told, in the notification and the lode output. */
export function oldVsCodeNotice(version: string): string {
  return (
    `@lode needs VS Code ${PROVIDER_API_SINCE} or later to answer without GitHub Copilot: VS Code ${version} ` +
    `cannot list lode's models, and refuses a chat request when it has no model ("Language model unavailable"). ` +
    "Update VS Code, or use an ACP client extension with `lode acp` (see ACP.md in this extension)."
  );
}

/** Registers the participant, its permission command and, where VS Code can, lode's models. */
export function registerChat(context: vscode.ExtensionContext, output: { appendLine(line: string): void }): LodeChat {
  const chat = new LodeChat(output);
  const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, chatContext, stream, token) =>
    chat.handle(request, chatContext, stream, token),
  );
  context.subscriptions.push(
    participant,
    vscode.commands.registerCommand(ANSWER_COMMAND, (questionId: unknown, optionId: unknown) =>
      chat.answer(questionId, optionId),
    ),
    chat,
  );
  const api = providerApi();
  if (api) {
    context.subscriptions.push(registerModels(chat, api));
    // VS Code asks a provider for its models only when something selects models, and the chat
    // panel's first request does that too late: it finds no model picked yet and fails with
    // "Language model unavailable". Asking now fills the model picker before the first request.
    Promise.resolve(vscode.lm.selectChatModels({ vendor: MODEL_VENDOR })).then(
      (models) => output.appendLine(`lode's models in VS Code: ${models.map((m) => m.name).join(", ") || "none"}`),
      (error) => output.appendLine(`could not list lode's models: ${String(error)}`),
    );
  } else {
    void tellOldVsCode(context, output);
  }
  return chat;
}

/** Once per VS Code version: the notice, with a button for each way out. */
async function tellOldVsCode(context: vscode.ExtensionContext, output: { appendLine(line: string): void }): Promise<void> {
  const notice = oldVsCodeNotice(vscode.version);
  output.appendLine(notice);
  if (context.globalState?.get(NOTICE_SHOWN_KEY) === vscode.version) return;
  await context.globalState?.update(NOTICE_SHOWN_KEY, vscode.version);
  const update = "Check for updates";
  const acp = "ACP clients";
  const choice = await vscode.window.showWarningMessage(notice, update, acp);
  if (choice === update) {
    await vscode.commands.executeCommand("update.checkForUpdates");
  } else if (choice === acp) {
    await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.joinPath(context.extensionUri, "ACP.md"));
  }
}
