; CUL402 eval-without-no-grad
; Candidates: every loop; the check keeps eval loops (see RULES.md) that run with autograd on.
(for_statement) @violation

(while_statement) @violation
