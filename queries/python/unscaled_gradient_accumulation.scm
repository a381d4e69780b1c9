; CUL502 unscaled-gradient-accumulation
; Candidates: every `x.backward(...)` call; the check keeps those in a step loop whose optimizer
; step sits under `if step % accum == 0:` while the loss is never divided by `accum`.
(call
  function: (attribute attribute: (identifier) @_method)
  (#eq? @_method "backward")) @violation
