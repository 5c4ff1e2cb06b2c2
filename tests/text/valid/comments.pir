// test: fmt
// A full-line comment before the mesh.
mesh [data=2]  // end of the mesh line

// Before the function.
// Two lines of it.
func @main(%x: f32[4,2] on [data, _],  // inside the signature
           // a full line inside the signature
           %y: f32[4,2] on [data, _])
    -> (z: f32[4,2] on [data, _]) {  // after the opening brace
  // before a statement
  %a = add %x, %y  // end of a statement
  %z = mul %a, %a
  // before return
  return %z  // end of return
  // before the closing brace
}
// between functions

func @other(%x: f32[]) -> (f32[]) {
  return %x
}
// at the end of the file
