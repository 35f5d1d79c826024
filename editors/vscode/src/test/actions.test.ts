// Plain-node tests of the extension's logic (`node --test out/test/`); VS Code itself is not
// run here.
import { test } from "node:test";
import * as assert from "node:assert/strict";
import { COMMANDS, pickAction, serverCommand } from "../actions";

test("every palette command runs one of the server's commands", () => {
  const server = COMMANDS.map((c) => c.server).sort();
  assert.deepEqual(server, ["lode.document", "lode.explain", "lode.fix", "lode.review", "lode.writeTest"]);
  for (const command of COMMANDS) {
    assert.notEqual(command.id, command.server, "the client registers the server's ids itself");
    assert.match(command.title, /^lode: /);
  }
  const manifest = require("../../package.json");
  const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command);
  for (const command of COMMANDS) {
    assert.ok(contributed.includes(command.id), command.id);
  }
});

test("the settings that start a program are the user's alone", () => {
  // A workspace's .vscode/settings.json must not name the program the extension starts, nor
  // add arguments such as `--config FILE` (a file lode would read as the user's own config):
  // machine-scoped settings are read from the user's settings only.
  const manifest = require("../../package.json");
  const properties = manifest.contributes.configuration.properties;
  for (const key of ["lode.path", "lode.extraArgs", "lode.chat.extraArgs"]) {
    assert.equal(properties[key].scope, "machine", key);
  }
});

test("the server command line comes from the settings", () => {
  assert.deepEqual(serverCommand(undefined, undefined), { command: "lode", args: ["lsp"] });
  assert.deepEqual(serverCommand("  ", null), { command: "lode", args: ["lsp"] });
  assert.deepEqual(serverCommand("/opt/lode/bin/lode", ["--exclude", "vendor/**", 3]), {
    command: "/opt/lode/bin/lode",
    args: ["lsp", "--exclude", "vendor/**"],
  });
});

test("the code action for a palette command is picked by command and diagnostic", () => {
  const target = (n: number) => ({ uri: "file:///w/a.rs", range: n });
  const actions = [
    { title: "lode: fix this diagnostic", command: { command: "lode.fix", arguments: [target(1)] }, diagnostics: [{ message: "first" }] },
    { title: "lode: fix this diagnostic", command: { command: "lode.fix", arguments: [target(2)] }, diagnostics: [{ message: "second" }] },
    { title: "lode: explain", command: { command: "lode.explain", arguments: [target(3)] } },
    { title: "lode: review", command: "lode.review", arguments: [target(4)] },
  ];
  assert.deepEqual(pickAction(actions, "lode.fix", "second"), { command: "lode.fix", arguments: [target(2)] });
  assert.deepEqual(pickAction(actions, "lode.fix", "unknown"), { command: "lode.fix", arguments: [target(1)] });
  assert.deepEqual(pickAction(actions, "lode.explain"), { command: "lode.explain", arguments: [target(3)] });
  assert.deepEqual(pickAction(actions, "lode.review"), { command: "lode.review", arguments: [target(4)] });
  assert.equal(pickAction(actions, "lode.writeTest"), undefined);
  assert.equal(pickAction([], "lode.fix"), undefined);
});
