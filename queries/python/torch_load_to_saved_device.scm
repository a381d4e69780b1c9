; CUL102 torch-load-to-saved-device
; Candidates: calls that may be `torch.load`. The check resolves the callee through imports and
; looks for `map_location`.

; torch.load(...), T.load(...), serialization.load(...)
(call
  function: (attribute
    attribute: (identifier) @_method)
  (#eq? @_method "load")) @violation

; load(...) after `from torch import load` (or an alias of it)
(call
  function: (identifier)) @violation
