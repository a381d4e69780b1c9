-- :CulintProbe, :CulintExplain and :CulintFixAll: each runs one of the server's
-- workspace/executeCommand commands and shows or applies the result.

local bit = require("bit")
local compat = require("culint.compat")
local view = require("culint.view")

local M = {}

local function notify(message, level)
  vim.notify("culint: " .. message, level or vim.log.levels.INFO)
end

--- Runs `command` on the culint server serving the current buffer and passes (err, result) on.
local function execute(command, arguments, on_result)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = compat.culint_clients(bufnr)[1]
  if not client then
    notify("the culint server is not running: open a Python file first (see :checkhealth lsp)", vim.log.levels.WARN)
    return
  end
  compat.request(client, "workspace/executeCommand", { command = command, arguments = arguments }, function(err, result)
    on_result(err, result)
  end, bufnr)
end

local function error_text(err)
  return type(err) == "table" and err.message or tostring(err)
end

-- LSP's RequestFailed: the server's answer when the machine has no NVIDIA driver or no GPU.
local REQUEST_FAILED = -32803

function M.probe()
  execute("culint.probe", {}, function(err, result)
    if err and err.code == REQUEST_FAILED then
      -- No GPU or driver is an answer, not a failure: the server gives the one-line reason as the
      -- error's message and the report in its data. Show it like any report.
      local data = err.data
      if type(data) == "table" and type(data.markdown) == "string" then
        view.show("probe", data.markdown)
      else
        view.show("probe", "# GPU probe\n\nThe probe could not run: " .. error_text(err))
      end
      return
    end
    if err then
      notify("the GPU probe failed: " .. error_text(err), vim.log.levels.ERROR)
      return
    end
    view.show("probe", view.markdown_of(result))
  end)
end

--- The text of the range the command was given: the visual selection, charwise when the '< and
--- '> marks lie on the range's lines, else whole lines.
local function range_text(command)
  local bufnr = vim.api.nvim_get_current_buf()
  local start_mark = vim.api.nvim_buf_get_mark(bufnr, "<")
  local end_mark = vim.api.nvim_buf_get_mark(bufnr, ">")
  local charwise = vim.fn.visualmode() == "v" and start_mark[1] == command.line1 and end_mark[1] == command.line2
  if not charwise then
    return table.concat(vim.api.nvim_buf_get_lines(bufnr, command.line1 - 1, command.line2, false), "\n")
  end
  local last_line = vim.api.nvim_buf_get_lines(bufnr, end_mark[1] - 1, end_mark[1], false)[1] or ""
  -- The end mark points at the first byte of the last selected character; include all of it.
  local end_col = math.min(#last_line, end_mark[2] + 1)
  while end_col < #last_line and bit.band(last_line:byte(end_col + 1), 0xC0) == 0x80 do
    end_col = end_col + 1
  end
  local parts = vim.api.nvim_buf_get_text(bufnr, start_mark[1] - 1, start_mark[2], end_mark[1] - 1, end_col, {})
  return table.concat(parts, "\n")
end

function M.explain(command)
  local text
  if command.range > 0 then
    text = range_text(command)
  else
    local register = command.args ~= "" and command.args or '"'
    text = vim.fn.getreg(register)
  end
  if vim.trim(text) == "" then
    notify(
      "nothing to explain: select the error text and run :'<,'>CulintExplain, "
        .. "or yank it and run :CulintExplain (or :CulintExplain + for the clipboard)",
      vim.log.levels.WARN
    )
    return
  end
  execute("culint.explain", { text }, function(err, result)
    if err then
      notify("could not explain the error: " .. error_text(err), vim.log.levels.ERROR)
      return
    end
    view.show("explain", view.markdown_of(result))
  end)
end

function M.fix_all()
  local bufnr = vim.api.nvim_get_current_buf()
  local document = { uri = vim.uri_from_bufnr(bufnr), version = vim.lsp.util.buf_versions[bufnr] }
  execute("culint.applyAllFixes", { document }, function(err)
    if err then
      notify("fix all failed: " .. error_text(err), vim.log.levels.ERROR)
    end
  end)
end

function M.register()
  vim.api.nvim_create_user_command("CulintProbe", M.probe, {
    desc = "culint: probe the GPU (free memory, cuBLAS health, driver and runtime)",
  })
  vim.api.nvim_create_user_command("CulintExplain", M.explain, {
    desc = "culint: explain a CUDA / cuBLAS error from the selection or a register",
    range = true,
    nargs = "?",
  })
  vim.api.nvim_create_user_command("CulintFixAll", M.fix_all, {
    desc = "culint: apply every safe fix in the buffer",
  })
end

return M
