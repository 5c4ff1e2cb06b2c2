// test: plan --device cuda
// Convolutions on the CUDA backend, matched onto cuDNN's three operations by
// their attributes (pjc_host::cudnn): a ResNet-style stride-2 forward
// convolution with asymmetric SAME padding (the input copied into a zeroed,
// explicitly padded window), the input gradient JAX writes for it (input
// dilated by the stride, the reversed kernel read flipped, the result
// computed one row longer and cropped), its kernel gradient (batch and
// features swapped, the stride as rhs_dilation), a depthwise forward
// convolution and its batch-grouped kernel gradient, an NCHW/OIHW one passed
// as it is; an integer convolution keeps its device kernel. The first three
// are cuDNN's three operations on one problem: one set of descriptors.
func @main(%x: f32[2,8,8,3], %w: f32[3,3,3,4], %dy: f32[2,4,4,4], %xd: f32[2,6,6,4], %wd: f32[3,3,1,8],
           %dyd: f32[2,6,6,8], %xn: f32[2,3,6,6], %wn: f32[4,3,3,3], %xi: i32[1,4,4,1], %wi: i32[3,3,1,1])
    -> (y: f32[2,4,4,4], dx: f32[2,8,8,3], dw: f32[3,3,3,4], yd: f32[2,6,6,8], dwd: f32[3,3,1,8], yn: f32[2,4,6,6], yi: i32[1,2,2,1]) {
  %y = convolution %x, %w {dims="b01f_01io->b01f", window_strides=[2,2], padding=[[0,1],[0,1]]} : f32[2,4,4,4]
  %dx = convolution %dy, %w {dims="b01f_01oi->b01f", padding=[[2,1],[2,1]], lhs_dilation=[2,2]} : f32[2,8,8,3]
  %dw = convolution %x, %dy {dims="f01b_i01o->01bf", padding=[[0,1],[0,1]], rhs_dilation=[2,2]} : f32[3,3,3,4]
  %yd = convolution %xd, %wd {dims="b01f_01io->b01f", padding=[[1,1],[1,1]], feature_group_count=4} : f32[2,6,6,8]
  %dwd = convolution %xd, %dyd {dims="f01b_i01o->01bf", padding=[[1,1],[1,1]], batch_group_count=4} : f32[3,3,1,8]
  %yn = convolution %xn, %wn {dims="bf01_oi01->bf01", padding=[[1,1],[1,1]]} : f32[2,4,6,6]
  %yi = convolution %xi, %wi {dims="b01f_01io->b01f"} : i32[1,2,2,1]
  return %y, %dx, %dw, %yd, %dwd, %yn, %yi
}
