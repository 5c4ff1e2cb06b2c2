; ModuleID = 'main'
source_filename = "main"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: nounwind
define void @k0_s(ptr noalias %bufs, i64 %begin, i64 %end) #0 {
entry:
  %acc0 = alloca float, align 4
  %0 = getelementptr inbounds ptr, ptr %bufs, i64 0
  %in0 = load ptr, ptr %0, align 8
  %1 = getelementptr inbounds ptr, ptr %bufs, i64 1
  %out0 = load ptr, ptr %1, align 8
  br label %o.head

o.head:                                           ; preds = %r0.exit, %entry
  %o = phi i64 [ %begin, %entry ], [ %15, %r0.exit ]
  %2 = icmp slt i64 %o, %end
  br i1 %2, label %o.body, label %o.exit

o.body:                                           ; preds = %o.head
  store float 0.000000e+00, ptr %acc0, align 4
  br label %r0.head

o.exit:                                           ; preds = %o.head
  ret void

r0.head:                                          ; preds = %r0.body, %o.body
  %r0 = phi i64 [ 0, %o.body ], [ %12, %r0.body ]
  %3 = icmp slt i64 %r0, 5
  br i1 %3, label %r0.body, label %r0.exit

r0.body:                                          ; preds = %r0.head
  %4 = mul i64 %o, 5
  %5 = add i64 0, %4
  %6 = mul i64 %r0, 1
  %7 = add i64 %5, %6
  %8 = getelementptr inbounds float, ptr %in0, i64 %7
  %9 = load float, ptr %8, align 4
  %10 = load float, ptr %acc0, align 4
  %11 = fadd reassoc float %10, %9
  store float %11, ptr %acc0, align 4
  %12 = add nsw i64 %r0, 1
  br label %r0.head

r0.exit:                                          ; preds = %r0.head
  %13 = load float, ptr %acc0, align 4
  %14 = getelementptr inbounds float, ptr %out0, i64 %o
  store float %13, ptr %14, align 4
  %15 = add nsw i64 %o, 1
  br label %o.head
}

attributes #0 = { nounwind "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
