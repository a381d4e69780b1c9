; CUL101 missing-set-device
; Candidates: every way code puts something on a CUDA device. The check keeps those that name no
; device index, in files that start a process group.

; model.cuda(), tensor.to(...), torch.device(...)
(call
  function: (attribute attribute: (identifier) @_method)
  (#any-of? @_method "cuda" "to" "device")) @violation

; device(...) after `from torch import device`
(call
  function: (identifier) @_function
  (#eq? @_function "device")) @violation

; torch.zeros(..., device="cuda")
(keyword_argument
  name: (identifier) @_key
  (#eq? @_key "device")
  value: (string)) @violation

; device = "cuda", or "cuda" if torch.cuda.is_available() else "cpu"
(assignment
  left: (identifier)
  right: [(string) (conditional_expression)]) @violation
