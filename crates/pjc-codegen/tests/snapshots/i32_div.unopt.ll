; ModuleID = 'main'
source_filename = "main"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: nounwind
define void @k0_r(ptr noalias %bufs, i64 %begin, i64 %end) #0 {
entry:
  %0 = getelementptr inbounds ptr, ptr %bufs, i64 0
  %in0 = load ptr, ptr %0, align 8
  %1 = getelementptr inbounds ptr, ptr %bufs, i64 1
  %in1 = load ptr, ptr %1, align 8
  %2 = getelementptr inbounds ptr, ptr %bufs, i64 2
  %out0 = load ptr, ptr %2, align 8
  br label %row.head

row.head:                                         ; preds = %j.exit, %entry
  %i = phi i64 [ %begin, %entry ], [ %29, %j.exit ]
  %3 = icmp slt i64 %i, %end
  br i1 %3, label %row.body, label %row.exit

row.body:                                         ; preds = %row.head
  %row = udiv i64 %i, 4
  %c0 = urem i64 %i, 4
  %4 = sub i64 4, %c0
  %5 = sub i64 %end, %i
  %6 = call i64 @llvm.smin.i64(i64 %4, i64 %5)
  %7 = sub i64 %i, %c0
  %8 = add i64 %c0, %6
  br label %j.head

row.exit:                                         ; preds = %row.head
  ret void

j.head:                                           ; preds = %j.body, %row.body
  %j = phi i64 [ %c0, %row.body ], [ %28, %j.body ]
  %9 = icmp slt i64 %j, %8
  br i1 %9, label %j.body, label %j.exit

j.body:                                           ; preds = %j.head
  %10 = add i64 %7, %j
  %11 = mul i64 %j, 1
  %12 = add i64 0, %11
  %13 = getelementptr inbounds i32, ptr %in0, i64 %12
  %14 = load i32, ptr %13, align 4
  %15 = mul i64 %j, 1
  %16 = add i64 0, %15
  %17 = getelementptr inbounds i32, ptr %in1, i64 %16
  %18 = load i32, ptr %17, align 4
  %19 = icmp eq i32 %18, 0
  %20 = icmp eq i32 %18, -1
  %21 = or i1 %19, %20
  %22 = select i1 %21, i32 1, i32 %18
  %23 = sdiv i32 %14, %22
  %24 = sub i32 0, %14
  %25 = select i1 %20, i32 %24, i32 %23
  %26 = select i1 %19, i32 -1, i32 %25
  %27 = getelementptr inbounds i32, ptr %out0, i64 %10
  store i32 %26, ptr %27, align 4
  %28 = add nsw i64 %j, 1
  br label %j.head

j.exit:                                           ; preds = %j.head
  %29 = add i64 %i, %6
  br label %row.head
}

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smin.i64(i64, i64) #1

attributes #0 = { nounwind "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
attributes #1 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
