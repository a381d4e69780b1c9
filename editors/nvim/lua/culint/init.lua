-- culint for Neovim: starts `culint server` for Python buffers through the built-in LSP client
-- and adds :CulintProbe, :CulintExplain and :CulintFixAll.
--
--   require("culint").setup({})
--
-- Neovim 0.11+ registers the server with vim.lsp.config / vim.lsp.enable. Older versions
-- (Debian 12 ships 0.7) start it with vim.lsp.start_client from a FileType autocmd, one client
-- per project root.

local compat = require("culint.compat")

local M = {}

--- The command that installs culint from a clone of its repository.
M.install_command = "cargo install --locked --path ."

local defaults = {
  -- The server command. The binary is looked up on PATH unless given as a path.
  cmd = { "culint", "server" },
  filetypes = { "python" },
  -- The first folder upwards holding one of these is the project root (workspace folder).
  root_markers = { "culint.toml", "pyproject.toml", "setup.py", "setup.cfg", ".git" },
  -- The server's settings: select, ignore, unsafeFixes, severity, configuration.
  settings = {},
  -- How :CulintProbe and :CulintExplain show their markdown: "float" or "split".
  view = "float",
  on_attach = nil,
  capabilities = nil,
}

-- Options whose value is a list replace the default list instead of merging into it.
local list_options = { cmd = true, filetypes = true, root_markers = true }

--- The options in force (defaults merged with the last setup() call).
M.options = vim.deepcopy(defaults)

local function merge_options(user)
  local options = vim.tbl_deep_extend("force", vim.deepcopy(defaults), user)
  for key in pairs(list_options) do
    if user[key] ~= nil then
      options[key] = user[key]
    end
  end
  return options
end

--- Configures culint and starts its server for Python buffers.
function M.setup(user_options)
  user_options = user_options or {}
  vim.validate({
    cmd = { user_options.cmd, "table", true },
    filetypes = { user_options.filetypes, "table", true },
    root_markers = { user_options.root_markers, "table", true },
    settings = { user_options.settings, "table", true },
    view = { user_options.view, "string", true },
  })
  M.options = merge_options(user_options)
  require("culint.commands").register()

  local executable = M.options.cmd[1]
  if vim.fn.executable(executable) ~= 1 then
    vim.notify(
      string.format(
        "culint: `%s` is not an executable on PATH. Install culint by running `%s` in a clone of the "
          .. "culint repository, or pass its path: require('culint').setup({ cmd = { '/path/to/culint', 'server' } })",
        executable,
        M.install_command
      ),
      vim.log.levels.ERROR
    )
    return
  end

  if compat.has_lsp_config() then
    vim.lsp.config("culint", M.client_config())
    vim.lsp.enable("culint")
  else
    require("culint.legacy").enable(M.options)
  end
end

--- The client configuration shared by both start paths (vim.lsp.config also takes root_markers
--- and filetypes; the legacy path reads them from M.options).
function M.client_config()
  local options = M.options
  -- An empty Lua table would be sent as the JSON array `[]`; the server wants an object.
  local settings = vim.tbl_isempty(options.settings) and vim.empty_dict() or options.settings
  return {
    name = "culint",
    cmd = options.cmd,
    filetypes = options.filetypes,
    root_markers = options.root_markers,
    init_options = settings,
    settings = { culint = settings },
    on_attach = options.on_attach,
    capabilities = options.capabilities,
  }
end

return M
