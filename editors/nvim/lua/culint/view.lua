-- Shows markdown from the server (probe reports, error explanations) in a floating window or a
-- scratch buffer in a split.

local M = {}

local function to_lines(markdown)
  local lines = vim.split(markdown, "\n", { plain = true })
  while #lines > 0 and lines[#lines] == "" do
    table.remove(lines)
  end
  return lines
end

local function show_float(name, lines)
  local width = math.min(100, math.max(40, vim.o.columns - 8))
  local bufnr, winid = vim.lsp.util.open_floating_preview(lines, "markdown", {
    border = "rounded",
    max_width = width,
    max_height = math.max(10, vim.o.lines - 6),
    focus_id = "culint_view",
    -- Closes when the cursor moves on; running the command again while it is open focuses it
    -- for scrolling.
    close_events = { "CursorMoved", "CursorMovedI", "InsertCharPre", "BufHidden" },
  })
  vim.api.nvim_buf_set_var(bufnr, "culint_view", name)
  return bufnr, winid
end

local function show_split(name, lines)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].filetype = "markdown"
  vim.bo[bufnr].bufhidden = "wipe"
  vim.bo[bufnr].modifiable = false
  pcall(vim.api.nvim_buf_set_name, bufnr, "culint://" .. name)
  vim.api.nvim_buf_set_var(bufnr, "culint_view", name)
  vim.cmd("botright split")
  local winid = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(winid, bufnr)
  vim.api.nvim_win_set_height(winid, math.min(#lines + 1, math.floor(vim.o.lines / 2)))
  vim.api.nvim_buf_set_keymap(bufnr, "n", "q", "<cmd>close<cr>", { noremap = true, silent = true })
  return bufnr, winid
end

--- Shows `markdown` under `name` ("probe", "explain") as configured by setup({ view = ... }).
--- Returns the buffer and window.
function M.show(name, markdown)
  local lines = to_lines(markdown)
  if require("culint").options.view == "split" then
    return show_split(name, lines)
  end
  return show_float(name, lines)
end

--- The markdown in a command result: a string, or a table with a markdown/text/report field.
function M.markdown_of(result)
  if type(result) == "string" then
    return result
  end
  if type(result) == "table" then
    for _, key in ipairs({ "markdown", "text", "report" }) do
      if type(result[key]) == "string" then
        return result[key]
      end
    end
  end
  return "```json\n" .. vim.fn.json_encode(result) .. "\n```"
end

return M
