// test: fmt
// Layout is free: statements and signatures may be spread or packed.
func   @main (  %x :f32[ 2 , 2 ]  ,%y:f32[2,2] )
  ->
  ( z : f32[2,2] )
{
  %a = add %x , %y :
     f32[2,2]
  %z=mul %a,%a
  return %z }
