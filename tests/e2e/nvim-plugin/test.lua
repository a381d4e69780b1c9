-- Runs inside a headless Neovim (see run.sh): loads the culint plugin from editors/nvim, opens the
-- fixture project's train.py and checks what a user gets through the built-in LSP client.
--
-- Environment: CULINT_NVIM_PLUGIN (editors/nvim), CULINT_BIN (the culint binary),
-- CULINT_E2E_FILE (the copy of project/train.py to open).
-- Prints "ok - NAME" / "not ok - NAME: why" per check, then "N passed, N failed"; exits 1 on a
-- failure.

local plugin_dir = assert(os.getenv("CULINT_NVIM_PLUGIN"), "CULINT_NVIM_PLUGIN is not set")
local culint_bin = assert(os.getenv("CULINT_BIN"), "CULINT_BIN is not set")
local script = assert(os.getenv("CULINT_E2E_FILE"), "CULINT_E2E_FILE is not set")

local EXPECTED_CODES = { "CUL201", "CUL202", "CUL303" }
local FIX = {
  code = "CUL202",
  title = "after the memory is released",
  before = "    torch.cuda.empty_cache()\n    del model, optimizer",
  after = "    del model, optimizer\n    torch.cuda.empty_cache()",
}
-- :CulintFixAll then applies the remaining safe fix (CUL303), not the unsafe one (CUL201).
local FIX_ALL = { before = "torch.cuda.amp.autocast()", after = 'torch.amp.autocast("cuda")' }
local has_nvidia_driver = vim.loop.fs_stat("/dev/nvidiactl") ~= nil
local PROBE_TEXT = has_nvidia_driver and "free" or "no NVIDIA driver"
local OOM_ERROR = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
  .. "capacity of 23.64 GiB of which 1.12 GiB is free. Of the allocated memory 20.1 GiB is allocated by PyTorch"
-- The knowledge entry's id, which culint's explanation names and the error text does not.
local EXPLAIN_TEXT = "cuda/oom-"
local TIMEOUT_MS = 60000

vim.opt.runtimepath:prepend(plugin_dir)

local passed, failed = 0, 0
local function out(line)
  io.stdout:write(line .. "\n")
end

-- Every notification is recorded; an ERROR one fails the run.
local notifications = {}
vim.notify = function(message, level)
  table.insert(notifications, { message = message, level = level or vim.log.levels.INFO })
end

-- Checks that talk to the server fail at once, without waiting, once it has not attached.
local server_attached = false

-- So are the server's window/showMessage messages: a warning or error (a rejected setting, say)
-- fails the run too.
local server_messages = {}
local show_message = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  table.insert(server_messages, result)
  return show_message(err, result, ctx, config)
end

local function check(name, body, needs_server)
  local ok, err
  if needs_server and not server_attached then
    ok, err = false, "the culint server never attached (see the first failure)"
  else
    ok, err = pcall(body)
  end
  if ok then
    passed = passed + 1
    out("ok - " .. name)
  else
    failed = failed + 1
    out("not ok - " .. name .. ": " .. tostring(err))
  end
end

local function wait_for(what, predicate)
  local value
  local done = vim.wait(TIMEOUT_MS, function()
    value = predicate()
    return value ~= nil and value ~= false
  end, 50)
  if not done then
    error("timed out after " .. TIMEOUT_MS / 1000 .. " s waiting for " .. what, 2)
  end
  return value
end

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

--- The text of the culint view window named `name` ("probe", "explain"), if one is open.
local function view_text(name)
  for _, winid in ipairs(vim.api.nvim_list_wins()) do
    local bufnr = vim.api.nvim_win_get_buf(winid)
    local ok, view = pcall(vim.api.nvim_buf_get_var, bufnr, "culint_view")
    if ok and view == name then
      return buffer_text(bufnr), winid
    end
  end
  return nil
end

--- Waits for the culint view `name`; fails at once when an error notification arrives instead.
local function wait_for_view(name)
  local seen = #notifications
  return wait_for("the " .. name .. " view", function()
    for index = seen + 1, #notifications do
      if notifications[index].level >= vim.log.levels.ERROR then
        error("error notification instead of the " .. name .. " view: " .. notifications[index].message, 0)
      end
    end
    return view_text(name)
  end)
end

local function close_view(name)
  local _, winid = view_text(name)
  if winid then
    vim.api.nvim_win_close(winid, true)
  end
end

local function culint_diagnostics(bufnr)
  return vim.tbl_filter(function(diagnostic)
    return diagnostic.source == "culint"
  end, vim.diagnostic.get(bufnr))
end

local compat = require("culint.compat")

check("setup() with a missing binary says how to install culint", function()
  require("culint").setup({ cmd = { "/nonexistent/culint", "server" } })
  local last = notifications[#notifications]
  assert(last and last.level == vim.log.levels.ERROR, "no error notification")
  assert(last.message:find("cargo install --locked --path .", 1, true), "no install command in: " .. last.message)
  notifications = {}
end)

require("culint").setup({ cmd = { culint_bin, "server" } })

check("setup() uses vim.lsp.enable on 0.11+ and a FileType autocmd before", function()
  if vim.fn.has("nvim-0.11") == 1 then
    assert(vim.lsp.is_enabled("culint"), "vim.lsp.is_enabled('culint') is false")
  else
    local autocmds = vim.api.nvim_get_autocmds({ group = "culint", event = "FileType" })
    assert(#autocmds == 1, "expected one FileType autocmd in the culint group, found " .. #autocmds)
  end
end)
vim.cmd("edit " .. vim.fn.fnameescape(script))
local bufnr = vim.api.nvim_get_current_buf()
local version = vim.version()
out(string.format("# Neovim %d.%d.%d", version.major, version.minor, version.patch))

check("the culint client attaches to the Python buffer", function()
  wait_for("a culint client attached to " .. script, function()
    local client = compat.culint_clients(bufnr)[1]
    return client and compat.is_attached(client, bufnr) and client.initialized ~= false
  end)
  server_attached = true
end)

check("diagnostics arrive with culint's codes", function()
  wait_for("diagnostics " .. table.concat(EXPECTED_CODES, ", "), function()
    local codes = {}
    for _, diagnostic in ipairs(culint_diagnostics(bufnr)) do
      codes[diagnostic.code] = true
    end
    for _, code in ipairs(EXPECTED_CODES) do
      if not codes[code] then
        return false
      end
    end
    return true
  end)
end, true)

check("a quick fix applies through vim.lsp.buf.code_action", function()
  local target
  for _, diagnostic in ipairs(culint_diagnostics(bufnr)) do
    if diagnostic.code == FIX.code then
      target = diagnostic
    end
  end
  assert(target, "no " .. FIX.code .. " diagnostic to fix")
  local before = buffer_text(bufnr)
  local first, last = before:find(FIX.before, 1, true)
  assert(first, "the fixture lacks the code to fix")
  local expected = before:sub(1, first - 1) .. FIX.after .. before:sub(last + 1)
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })

  local offered = {}
  vim.ui.select = function(items, _, on_choice)
    for _, item in ipairs(items) do
      -- 0.11 passes { action = ..., ctx = ... }; 0.7 passes { client_id, action }.
      local action = item.action or item[2]
      table.insert(offered, action.title)
      if action.title:find(FIX.title, 1, true) then
        on_choice(item)
        return
      end
    end
    on_choice(nil)
  end
  vim.lsp.buf.code_action()
  wait_for("the buffer to read as fixed (offered: " .. table.concat(offered, " | ") .. ")", function()
    return buffer_text(bufnr) == expected
  end)
  vim.cmd("silent write")
  local on_disk = table.concat(vim.fn.readfile(script), "\n")
  assert(on_disk == expected, "the written file differs from the fixed buffer")
  wait_for(FIX.code .. " to be gone after the fix", function()
    for _, diagnostic in ipairs(culint_diagnostics(bufnr)) do
      if diagnostic.code == FIX.code then
        return false
      end
    end
    return true
  end)
end, true)

check(":CulintFixAll applies the remaining safe fix", function()
  local before = buffer_text(bufnr)
  local first, last = before:find(FIX_ALL.before, 1, true)
  assert(first, "the fixture lacks " .. FIX_ALL.before)
  local expected = before:sub(1, first - 1) .. FIX_ALL.after .. before:sub(last + 1)
  vim.cmd("CulintFixAll")
  wait_for("the buffer to read as fixed by :CulintFixAll", function()
    return buffer_text(bufnr) == expected
  end)
end, true)

check(":CulintProbe shows the probe's answer", function()
  vim.cmd("CulintProbe")
  local text = wait_for_view("probe")
  assert(text:find(PROBE_TEXT, 1, true), "the probe view lacks '" .. PROBE_TEXT .. "':\n" .. text)
  close_view("probe")
end, true)

check(":CulintExplain explains the error in a register", function()
  vim.fn.setreg("e", OOM_ERROR)
  vim.cmd("CulintExplain e")
  local text = wait_for_view("explain")
  assert(text:find(EXPLAIN_TEXT, 1, true), "the explanation lacks '" .. EXPLAIN_TEXT .. "':\n" .. text)
  close_view("explain")
end, true)

check(":'<,'>CulintExplain explains the visual selection", function()
  vim.cmd("enew")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "Traceback (most recent call last):", OOM_ERROR, "done" })
  -- Leaving visual mode with <Esc> sets the '< and '> marks the range refers to.
  vim.cmd("normal! 2GV\27")
  vim.cmd("'<,'>CulintExplain")
  local text = wait_for_view("explain")
  assert(text:find(EXPLAIN_TEXT, 1, true), "the explanation lacks '" .. EXPLAIN_TEXT .. "':\n" .. text)
  close_view("explain")
  vim.cmd("buffer " .. bufnr)
end, true)

check("no error notifications, no warnings from the server", function()
  local errors = {}
  for _, notification in ipairs(notifications) do
    if notification.level >= vim.log.levels.ERROR then
      table.insert(errors, notification.message)
    end
  end
  for _, message in ipairs(server_messages) do
    if message.type <= vim.lsp.protocol.MessageType.Warning then
      table.insert(errors, "server: " .. message.message)
    end
  end
  assert(#errors == 0, table.concat(errors, "\n"))
end)

out(string.format("%d passed, %d failed", passed, failed))
vim.cmd(failed > 0 and "cquit 1" or "qall!")
