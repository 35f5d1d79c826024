// lode's models in VS Code's model picker: a language-model provider (vendor `lode`, declared in
// package.json's `languageModelChatProviders`) listing the values of `lode acp`'s `model` config
// option. VS Code attaches a model to every chat request and refuses the request when it has
// none, even for a participant that never calls `vscode.lm`; with this provider, `@lode` works
// without GitHub Copilot or any other model installed, and the model picked for `@lode` becomes
// the lode session's model (participant.ts). Picked for VS Code's own chat, a lode model answers
// through lode's agent in its read-only `ask` mode (`LodeChat.complete`).
//
// When lode has no model to offer (no folder open, no provider configured, the binary missing),
// the picker shows one entry named after the problem, so `@lode` still reaches lode and answers
// with the fix instead of VS Code's "Language model unavailable".

import * as vscode from "vscode";

import { type ModelInformation, type ModelProvider, type ProviderApi, type RequestMessage, messageText } from "./lmApi";
import { type LodeChat, MODEL_VENDOR, type ModelListing } from "./participant";

/** The id of the entry shown when lode has no model to offer. */
export const UNAVAILABLE_MODEL = "lode-unavailable";
/** lode's context window when its description does not say (lode manages its own context anyway). */
const DEFAULT_CONTEXT = 32_000;
/** What VS Code is told a lode answer may hold; lode's agent keeps its own limits. */
const MAX_OUTPUT_TOKENS = 8_192;

/** VS Code's model entries for lode's models (or the one entry naming why there are none). */
export function modelInformation(listing: ModelListing): ModelInformation[] {
  if (listing.models.length === 0) {
    return [
      {
        id: UNAVAILABLE_MODEL,
        name: "lode (no model)",
        family: "lode",
        version: "1",
        detail: "see the tooltip",
        tooltip: listing.problem ?? "lode has no model to offer",
        maxInputTokens: DEFAULT_CONTEXT,
        maxOutputTokens: MAX_OUTPUT_TOKENS,
        // Tool calling, so VS Code's Agent mode (the chat panel's default) offers it too.
        capabilities: { toolCalling: true, imageInput: false },
      },
    ];
  }
  return listing.models.map((model) => ({
    id: model.value,
    name: `lode: ${model.name}`,
    family: "lode",
    version: "1",
    detail: model.description,
    tooltip: `lode's agent with the "${model.name}" provider${model.description ? ` (${model.description})` : ""}`,
    maxInputTokens: contextWindow(model.description),
    maxOutputTokens: MAX_OUTPUT_TOKENS,
    // lode's agent calls tools (its own); without this VS Code's Agent mode, the chat panel's
    // default, would not offer the model, and `@lode` there would have none.
    capabilities: { toolCalling: true, imageInput: false },
  }));
}

/** The context window from lode's description of a model, "MODEL (32k context)". */
export function contextWindow(description: string | undefined): number {
  const match = /\((\d+)k context\)\s*$/.exec(description ?? "");
  return match ? Number(match[1]) * 1000 : DEFAULT_CONTEXT;
}

/** The conversation VS Code hands a provider, as one prompt for lode's agent. */
export function conversationPrompt(messages: ReadonlyArray<RequestMessage>): string {
  if (messages.length === 1) return messageText(messages[0]);
  const role = (message: RequestMessage): string =>
    message.role === 2 ? "Assistant" : message.role === 1 ? "User" : "Instructions";
  return messages.map((message) => `${role(message)}: ${messageText(message)}`).join("\n\n");
}

/** The provider VS Code calls. */
export class LodeModelProvider implements ModelProvider {
  readonly onDidChangeLanguageModelChatInformation: vscode.Event<void>;

  constructor(
    private readonly chat: LodeChat,
    private readonly api: ProviderApi,
  ) {
    this.onDidChangeLanguageModelChatInformation = chat.onDidChangeModels;
  }

  async provideLanguageModelChatInformation(): Promise<ModelInformation[]> {
    return modelInformation(await this.chat.listModels());
  }

  async provideLanguageModelChatResponse(
    model: ModelInformation,
    messages: ReadonlyArray<RequestMessage>,
    _options: unknown,
    progress: vscode.Progress<unknown>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    if (model.id === UNAVAILABLE_MODEL) {
      throw new Error(model.tooltip ?? "lode has no model to offer");
    }
    await this.chat.complete(model.id, conversationPrompt(messages), (text) => progress.report(this.api.textPart(text)), token);
  }

  /** An estimate (4 characters a token): lode counts its own tokens, VS Code only budgets with it. */
  async provideTokenCount(_model: ModelInformation, text: string | RequestMessage): Promise<number> {
    const content = typeof text === "string" ? text : messageText(text);
    return Math.ceil(content.length / 4);
  }
}

/** Registers lode's models with VS Code. */
export function registerModels(chat: LodeChat, api: ProviderApi): vscode.Disposable {
  return api.registerLanguageModelChatProvider(MODEL_VENDOR, new LodeModelProvider(chat, api));
}
