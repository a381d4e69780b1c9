; CUL401 graph-kept-across-iterations
; Candidates: the shapes that keep a value past an iteration. The check keeps those in a step
; body whose value carries autograd history.

; total += loss
(augmented_assignment
  operator: "+=") @violation

; total = total + loss
(assignment
  left: [(identifier) (attribute)]
  right: (binary_operator
    operator: "+")) @violation

; history["loss"] = loss
(assignment
  left: (subscript)) @violation

; losses.append(loss)
(call
  function: (attribute attribute: (identifier) @_method)
  (#eq? @_method "append")) @violation
