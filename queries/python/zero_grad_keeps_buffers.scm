; CUL503 zero-grad-keeps-buffers
; Candidates: `x.zero_grad(set_to_none=False)` and `x.zero_grad(False)`.
(call
  function: (attribute attribute: (identifier) @_method)
  arguments: (argument_list
    (keyword_argument
      name: (identifier) @_keyword
      value: (false)))
  (#eq? @_method "zero_grad")
  (#eq? @_keyword "set_to_none")) @violation

(call
  function: (attribute attribute: (identifier) @_method)
  arguments: (argument_list . (false) .)
  (#eq? @_method "zero_grad")) @violation
