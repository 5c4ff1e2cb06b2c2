func @main(%a: bf16[1000],
           %b: f16[2100],
           %c: bf16[4,300]) -> (sa: bf16[], sb: f16[], sc: bf16[4]) {
  %sa = reduce %a {dims=[0], kind=sum} : bf16[]
  %sb = reduce %b {dims=[0], kind=sum} : f16[]
  %sc = reduce %c {dims=[1], kind=sum} : bf16[4]
  return %sa, %sb, %sc
}
