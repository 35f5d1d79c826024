-- lode as a language server in Neovim, beside each language's usual server.
--
-- Put this file on your runtimepath as lua/lode.lua (or copy its body into init.lua) and call
--   require("lode").setup()
-- Options: require("lode").setup({ cmd = { "lode", "lsp", "--root", "/repo" },
--                                  filetypes = { "rust", "python" } })
--
-- With nvim-lspconfig it registers a `lode` config (then `require("lspconfig").lode.setup({})`
-- is done for you); without it, an autocommand starts lode for the listed filetypes with
-- vim.lsp.start_client (Neovim 0.7+).

local M = {}

M.defaults = {
  cmd = { "lode", "lsp" },
  filetypes = { "rust", "python", "javascript", "javascriptreact", "typescript", "typescriptreact", "go" },
  root_markers = { ".lode", ".git" },
  -- Passed to the client as is (e.g. { debounce_text_changes = 150 }).
  flags = {},
}

local function find_root(markers, start)
  local dir = vim.fn.fnamemodify(start, ":p:h")
  while dir and dir ~= "" do
    for _, marker in ipairs(markers) do
      if vim.fn.isdirectory(dir .. "/" .. marker) == 1 or vim.fn.filereadable(dir .. "/" .. marker) == 1 then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  return vim.fn.getcwd()
end

function M.setup(opts)
  local config = vim.tbl_deep_extend("force", M.defaults, opts or {})

  local ok, lspconfig = pcall(require, "lspconfig")
  if ok then
    local configs = require("lspconfig.configs")
    if not configs.lode then
      configs.lode = {
        default_config = {
          cmd = config.cmd,
          filetypes = config.filetypes,
          root_dir = require("lspconfig.util").root_pattern(unpack(config.root_markers)),
          flags = config.flags,
        },
      }
    end
    lspconfig.lode.setup({})
    return
  end

  -- No lspconfig: one client per root, attached to every buffer of the listed filetypes.
  local clients = {}
  vim.api.nvim_create_autocmd("FileType", {
    pattern = config.filetypes,
    callback = function(args)
      local root = find_root(config.root_markers, vim.api.nvim_buf_get_name(args.buf))
      local id = clients[root]
      if not id or vim.lsp.get_client_by_id(id) == nil then
        id = vim.lsp.start_client({
          name = "lode",
          cmd = config.cmd,
          root_dir = root,
          flags = config.flags,
          workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
        })
        clients[root] = id
      end
      if id then
        vim.lsp.buf_attach_client(args.buf, id)
      end
    end,
  })
end

return M
