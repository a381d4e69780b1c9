-- The few LSP client calls whose API changed between Neovim 0.7 and 0.11.

local M = {}

function M.has_lsp_config()
  return vim.fn.has("nvim-0.11") == 1 and type(vim.lsp.config) == "table" and vim.lsp.enable ~= nil
end

--- The running culint clients, those attached to `bufnr` first.
function M.culint_clients(bufnr)
  local all
  if vim.lsp.get_clients then
    all = vim.lsp.get_clients({ name = "culint" })
  else
    all = vim.tbl_filter(function(client)
      return client.name == "culint"
    end, vim.lsp.get_active_clients())
  end
  table.sort(all, function(a, b)
    local a_attached = bufnr ~= nil and M.is_attached(a, bufnr) and 0 or 1
    local b_attached = bufnr ~= nil and M.is_attached(b, bufnr) and 0 or 1
    if a_attached ~= b_attached then
      return a_attached < b_attached
    end
    return a.id < b.id
  end)
  return all
end

function M.is_attached(client, bufnr)
  if client.attached_buffers then
    return client.attached_buffers[bufnr] == true
  end
  return vim.lsp.buf_is_attached(bufnr, client.id)
end

function M.is_stopped(client)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- client:request on 0.11+, client.request before (the dot form is deprecated there).
function M.request(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

return M
