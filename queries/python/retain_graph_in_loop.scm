; CUL404 retain-graph-in-loop
; Candidates: `x.backward(..., retain_graph=True)`; the check keeps those in a step loop whose
; graph nothing uses again.
(call
  function: (attribute attribute: (identifier) @_method)
  arguments: (argument_list
    (keyword_argument
      name: (identifier) @_keyword
      value: (true)))
  (#eq? @_method "backward")
  (#eq? @_keyword "retain_graph")) @violation
