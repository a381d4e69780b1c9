; CUL501 missing-zero-grad
; Candidates: every `x.step(...)` call; the check keeps optimizer steps (`opt.step()`,
; `scaler.step(opt)`) in a step body that never zeroes that optimizer's gradients.
(call
  function: (attribute attribute: (identifier) @_method)
  (#eq? @_method "step")) @violation
