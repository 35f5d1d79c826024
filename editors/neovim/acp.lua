-- lode as an Agent Client Protocol agent in Neovim, through CodeCompanion or avante.nvim.
-- Both plugins start `lode acp` themselves and talk ACP over its stdin/stdout; lode finds the
-- project root from Neovim's working directory and reads .lode/config.toml there.
-- Use whichever plugin you have; see README.md in this directory.

-- CodeCompanion (written for v18: `interactions`, which v17 called `strategies`).
-- A new ACP adapter is made by extending a built-in one and replacing its command; "goose" is
-- the plainest built-in (no authentication step).
require("codecompanion").setup({
  adapters = {
    acp = {
      lode = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "lode",
          formatted_name = "lode",
          commands = {
            default = { "lode", "acp" },
          },
          defaults = {
            mcpServers = {},
            timeout = 20000, -- milliseconds for the ACP handshake
          },
        })
      end,
    },
  },
  interactions = {
    chat = { adapter = "lode" },
  },
})

-- avante.nvim (written for the ACP support of avante's main branch: `acp_providers`).
require("avante").setup({
  provider = "lode",
  acp_providers = {
    ["lode"] = {
      command = "lode",
      args = { "acp" },
      env = {
        -- API keys named by `api_key_env` in lode's config, if they are not already exported:
        -- OPENAI_API_KEY = os.getenv("OPENAI_API_KEY"),
      },
    },
  },
})
