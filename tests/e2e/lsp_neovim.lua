-- Driven by tests/e2e/lsp_neovim.rs: headless Neovim with editors/neovim/lode.lua against the real
-- `lode lsp`, including a code action whose edit Neovim applies. Writes what it saw as JSON to $LODE_TEST_OUT; any failure exits non-zero.

local function fail(message)
  local file = io.open(os.getenv("LODE_TEST_OUT"), "w")
  file:write(vim.fn.json_encode({ error = tostring(message) }))
  file:close()
  vim.cmd("cquit 1")
end

local function request(method, params)
  local responses, err = vim.lsp.buf_request_sync(0, method, params, 30000)
  if not responses then
    error(method .. " failed: " .. tostring(err))
  end
  for _, response in pairs(responses) do
    if response.error then
      error(method .. ": " .. vim.inspect(response.error))
    end
    return response.result
  end
  error(method .. ": no response")
end

local function names(symbols)
  local found = {}
  for _, symbol in ipairs(symbols or {}) do
    table.insert(found, symbol.name .. "@" .. vim.fn.fnamemodify(vim.uri_to_fname(symbol.location.uri), ":t"))
  end
  return found
end

local ok, err = xpcall(function()
  local root = os.getenv("LODE_TEST_ROOT")
  package.path = os.getenv("LODE_EDITORS") .. "/neovim/?.lua;" .. package.path
  require("lode").setup({
    cmd = { os.getenv("LODE_BIN"), "lsp", "--no-watch", "--debounce-ms", "600000" },
    flags = { debounce_text_changes = 0 },
  })
  vim.cmd("edit " .. root .. "/src/main.rs")

  local attached = vim.wait(30000, function()
    local clients = vim.lsp.buf_get_clients(0)
    for _, client in pairs(clients) do
      if client.server_capabilities and client.server_capabilities.workspaceSymbolProvider then
        return true
      end
    end
    return false
  end, 50)
  if not attached then
    error("lode lsp never attached")
  end

  local results = {}
  -- The first index build runs in the background and reports $/progress: wait for its end.
  local indexed = vim.wait(30000, function()
    for _, client in pairs(vim.lsp.buf_get_clients(0)) do
      local progress = client.messages.progress["lode/indexing"]
      if progress and progress.done then
        return true
      end
    end
    return false
  end, 50)
  if not indexed then
    error("the workspace was never indexed")
  end
  results.symbols = names(request("workspace/symbol", { query = "Store" }))

  -- Definition of `helper` in `use crate::store::helper;` (line 4, 1-based).
  vim.api.nvim_win_set_cursor(0, { 4, 19 })
  local definitions = request("textDocument/definition", vim.lsp.util.make_position_params())
  results.definitions = {}
  for _, location in ipairs(definitions or {}) do
    table.insert(results.definitions, vim.fn.fnamemodify(vim.uri_to_fname(location.uri), ":t") .. ":" .. location.range.start.line)
  end

  -- An unsaved edit, sent by Neovim as an incremental didChange.
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { "fn typed_in_neovim() {}" })
  results.unsaved = names(request("workspace/symbol", { query = "typed_in_neovim" }))

  -- A code action through the agent (the scripted model, fixtures/llm/lsp_neovim.json):
  -- Neovim's own workspace/applyEdit handler must apply the edit to the buffer.
  local bufnr = vim.api.nvim_get_current_buf()
  local range = { start = { line = 6, character = 4 }, ["end"] = { line = 6, character = 12 } }
  local diagnostic = { range = range, severity = 2, source = "test", message = "unused result" }
  local actions = request("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = range,
    context = { diagnostics = { diagnostic } },
  })
  local fix
  for _, action in ipairs(actions or {}) do
    if action.title == "lode: fix this diagnostic" then
      fix = action
    end
  end
  if not fix then
    error("no fix action in " .. vim.inspect(actions))
  end
  local lode
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    lode = client
  end
  local answered, failure = false, nil
  lode.request("workspace/executeCommand", fix.command, function(err)
    answered = true
    failure = err
  end, bufnr)
  local applied = vim.wait(60000, function()
    return answered and vim.api.nvim_buf_get_lines(bufnr, 6, 7, false)[1] == "    let _ = helper();"
  end, 50)
  if failure then
    error("executeCommand failed: " .. vim.inspect(failure))
  end
  if not applied then
    error("the edit never reached the buffer: " .. table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n"))
  end
  results.buffer = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  results.disk_before_write = table.concat(vim.fn.readfile(root .. "/src/main.rs"), "\n")
  vim.cmd("write")
  results.disk_after_write = table.concat(vim.fn.readfile(root .. "/src/main.rs"), "\n")

  local file = io.open(os.getenv("LODE_TEST_OUT"), "w")
  file:write(vim.fn.json_encode(results))
  file:close()
  vim.lsp.stop_client(vim.lsp.get_active_clients())
  vim.cmd("qall!")
end, debug.traceback)

if not ok then
  fail(err)
end
