-- Starts culint on Neovim before 0.11: a FileType autocmd finds the buffer's project root and
-- attaches the buffer to that root's client, starting one with vim.lsp.start_client if needed.

local compat = require("culint.compat")

local M = {}

local client_by_root = {}

local function find_root(path, markers)
  local directory = vim.fn.fnamemodify(path, ":p:h")
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(directory .. "/" .. marker) then
        return directory
      end
    end
    local parent = vim.fn.fnamemodify(directory, ":h")
    if parent == directory then
      return nil
    end
    directory = parent
  end
end

local function running_client_id(root)
  local id = client_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if client and not compat.is_stopped(client) then
    return id
  end
  return nil
end

--- Attaches `bufnr` to culint if it is a Python file on disk.
function M.attach(bufnr, options)
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == "" or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local root = find_root(path, options.root_markers) or vim.fn.fnamemodify(path, ":p:h")
  local client_id = running_client_id(root)
  if not client_id then
    local config = vim.tbl_extend("force", require("culint").client_config(), { root_dir = root })
    config.filetypes = nil
    config.root_markers = nil
    client_id = vim.lsp.start_client(config)
    if not client_id then
      vim.notify("culint: could not start `" .. table.concat(options.cmd, " ") .. "`", vim.log.levels.ERROR)
      return
    end
    client_by_root[root] = client_id
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
end

function M.enable(options)
  local group = vim.api.nvim_create_augroup("culint", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = options.filetypes,
    callback = function(event)
      M.attach(event.buf, options)
    end,
    desc = "Attach culint to the buffer",
  })
  -- Buffers opened before setup() ran.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr)
      and vim.tbl_contains(options.filetypes, vim.bo[bufnr].filetype)
    then
      M.attach(bufnr, options)
    end
  end
end

return M
