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
  %i = phi i64 [ %begin, %entry ], [ %42, %j.exit ]
  %3 = icmp slt i64 %i, %end
  br i1 %3, label %row.body, label %row.exit

row.body:                                         ; preds = %row.head
  %row = udiv i64 %i, 3
  %c0 = urem i64 %i, 3
  %4 = sub i64 3, %c0
  %5 = sub i64 %end, %i
  %6 = call i64 @llvm.smin.i64(i64 %4, i64 %5)
  %7 = sub i64 %i, %c0
  %8 = add i64 %c0, %6
  br label %j.head

row.exit:                                         ; preds = %row.head
  ret void

j.head:                                           ; preds = %j.body, %row.body
  %j = phi i64 [ %c0, %row.body ], [ %41, %j.body ]
  %9 = icmp slt i64 %j, %8
  br i1 %9, label %j.body, label %j.exit

j.body:                                           ; preds = %j.head
  %10 = add i64 %7, %j
  %11 = mul i64 %j, 1
  %12 = add i64 0, %11
  %13 = getelementptr inbounds i16, ptr %in0, i64 %12
  %14 = load i16, ptr %13, align 2
  %15 = zext i16 %14 to i32
  %16 = shl i32 %15, 16
  %17 = bitcast i32 %16 to float
  %18 = mul i64 %j, 1
  %19 = add i64 0, %18
  %20 = getelementptr inbounds i16, ptr %in1, i64 %19
  %21 = load i16, ptr %20, align 2
  %22 = zext i16 %21 to i32
  %23 = shl i32 %22, 16
  %24 = bitcast i32 %23 to float
  %25 = fadd float %17, %24
  %26 = bitcast float %25 to i32
  %27 = lshr i32 %26, 16
  %28 = and i32 %27, 1
  %29 = add i32 %26, 32767
  %30 = add i32 %29, %28
  %31 = lshr i32 %30, 16
  %32 = lshr i32 %26, 16
  %33 = or i32 %32, 64
  %34 = fcmp uno float %25, %25
  %35 = select i1 %34, i32 %33, i32 %31
  %36 = trunc i32 %35 to i16
  %37 = zext i16 %36 to i32
  %38 = shl i32 %37, 16
  %39 = bitcast i32 %38 to float
  %40 = getelementptr inbounds i16, ptr %out0, i64 %10
  store i16 %36, ptr %40, align 2
  %41 = add nsw i64 %j, 1
  br label %j.head

j.exit:                                           ; preds = %j.head
  %42 = add i64 %i, %6
  br label %row.head
}

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smin.i64(i64, i64) #1

attributes #0 = { nounwind "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
attributes #1 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
