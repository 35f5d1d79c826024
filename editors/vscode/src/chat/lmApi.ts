// The part of VS Code's language-model provider API (`vscode.lm.registerLanguageModelChatProvider`,
// stable since VS Code 1.104) that lode uses, typed here because the extension compiles against
// the oldest `vscode` it runs on (engines ^1.91, @types/vscode 1.91), where the API does not
// exist. `providerApi()` finds it at run time; on an older VS Code it answers undefined and the
// extension says what to do instead (extension.ts).

import * as vscode from "vscode";

/** `vscode.LanguageModelChatInformation`: one model in VS Code's model picker. */
export interface ModelInformation {
  readonly id: string;
  readonly name: string;
  readonly family: string;
  readonly version: string;
  readonly tooltip?: string;
  readonly detail?: string;
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number;
  readonly capabilities: { readonly imageInput?: boolean; readonly toolCalling?: boolean | number };
}

/** `vscode.LanguageModelChatRequestMessage`: a message VS Code hands a provider. */
export interface RequestMessage {
  /** `vscode.LanguageModelChatMessageRole`: 1 user, 2 assistant (3, system, in newer versions). */
  readonly role: number;
  readonly content: ReadonlyArray<unknown>;
  readonly name: string | undefined;
}

/** `vscode.LanguageModelChatProvider`. */
export interface ModelProvider<T extends ModelInformation = ModelInformation> {
  readonly onDidChangeLanguageModelChatInformation?: vscode.Event<void>;
  provideLanguageModelChatInformation(options: { readonly silent: boolean }, token: vscode.CancellationToken): Promise<T[]>;
  provideLanguageModelChatResponse(
    model: T,
    messages: ReadonlyArray<RequestMessage>,
    options: unknown,
    progress: vscode.Progress<unknown>,
    token: vscode.CancellationToken,
  ): Promise<void>;
  provideTokenCount(model: T, text: string | RequestMessage, token: vscode.CancellationToken): Promise<number>;
}

/** What the provider API adds to `vscode`. */
export interface ProviderApi {
  registerLanguageModelChatProvider(vendor: string, provider: ModelProvider): vscode.Disposable;
  /** `vscode.LanguageModelTextPart`: a piece of a streamed answer. */
  textPart(text: string): unknown;
}

/** The provider API of the running VS Code, or undefined where it is older than 1.104. */
export function providerApi(api: typeof vscode = vscode): ProviderApi | undefined {
  const lm = (api as { lm?: { registerLanguageModelChatProvider?: unknown } }).lm;
  const TextPart = (api as { LanguageModelTextPart?: new (value: string) => unknown }).LanguageModelTextPart;
  const register = lm?.registerLanguageModelChatProvider;
  if (typeof register !== "function" || typeof TextPart !== "function") return undefined;
  return {
    registerLanguageModelChatProvider: (vendor, provider) =>
      (register as ProviderApi["registerLanguageModelChatProvider"]).call(lm, vendor, provider),
    textPart: (text) => new TextPart(text),
  };
}

/** The text of a message's parts (`LanguageModelTextPart`s; tool calls and data are named, not shown). */
export function messageText(message: RequestMessage): string {
  const pieces: string[] = [];
  for (const part of message.content) {
    if (typeof part === "string") {
      pieces.push(part);
    } else if (part && typeof part === "object" && "value" in part && typeof part.value === "string") {
      pieces.push(part.value);
    } else if (part && typeof part === "object" && "name" in part && typeof part.name === "string") {
      pieces.push(`[tool call ${part.name}]`);
    } else if (part && typeof part === "object" && "callId" in part) {
      const content = "content" in part && Array.isArray(part.content) ? part.content : [];
      pieces.push(`[tool result] ${messageText({ role: message.role, content, name: undefined })}`);
    }
  }
  return pieces.join("");
}
