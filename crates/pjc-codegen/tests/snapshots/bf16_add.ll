; ModuleID = 'main'
source_filename = "main"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none)
define void @k0_r(ptr noalias readonly captures(none) %bufs, i64 %begin, i64 %end) local_unnamed_addr #0 {
entry:
  %in0 = load ptr, ptr %bufs, align 8
  %0 = getelementptr inbounds nuw i8, ptr %bufs, i64 8
  %in1 = load ptr, ptr %0, align 8
  %1 = getelementptr inbounds nuw i8, ptr %bufs, i64 16
  %out0 = load ptr, ptr %1, align 8
  %2 = icmp slt i64 %begin, %end
  br i1 %2, label %row.body.preheader, label %row.exit

row.body.preheader:                               ; preds = %entry
  %out03 = ptrtoint ptr %out0 to i64
  %in15 = ptrtoint ptr %in1 to i64
  %in04 = ptrtoint ptr %in0 to i64
  %3 = sub i64 %out03, %in04
  %4 = sub i64 %out03, %in15
  br label %row.body

row.body:                                         ; preds = %row.body.preheader, %j.exit
  %i2 = phi i64 [ %88, %j.exit ], [ %begin, %row.body.preheader ]
  %c0 = urem i64 %i2, 3
  %5 = udiv i64 %i2, 3
  %6 = xor i64 %c0, 3
  %7 = sub i64 %end, %i2
  %8 = tail call i64 @llvm.smin.i64(i64 %6, i64 %7)
  %9 = add i64 %8, %c0
  %10 = icmp sgt i64 %8, 0
  br i1 %10, label %iter.check, label %j.exit

iter.check:                                       ; preds = %row.body
  %11 = sub nuw i64 %i2, %c0
  %12 = getelementptr i16, ptr %out0, i64 %11
  %13 = add i64 %i2, 1
  %14 = sub i64 %13, %11
  %smax = tail call i64 @llvm.smax.i64(i64 %9, i64 %14)
  %15 = add i64 %smax, %11
  %16 = sub i64 %15, %i2
  %min.iters.check = icmp ult i64 %16, 4
  br i1 %min.iters.check, label %j.body.preheader, label %vector.memcheck

vector.memcheck:                                  ; preds = %iter.check
  %17 = mul i64 %5, 6
  %18 = add i64 %3, %17
  %diff.check = icmp ult i64 %18, 32
  %19 = add i64 %4, %17
  %diff.check6 = icmp ult i64 %19, 32
  %conflict.rdx = or i1 %diff.check, %diff.check6
  br i1 %conflict.rdx, label %j.body.preheader, label %vector.main.loop.iter.check

vector.main.loop.iter.check:                      ; preds = %vector.memcheck
  %min.iters.check7 = icmp ult i64 %16, 16
  br i1 %min.iters.check7, label %vec.epilog.ph, label %vector.ph

vector.ph:                                        ; preds = %vector.main.loop.iter.check
  %n.mod.vf = and i64 %16, 12
  %n.vec = and i64 %16, -16
  br label %vector.body

vector.body:                                      ; preds = %vector.body, %vector.ph
  %index = phi i64 [ 0, %vector.ph ], [ %index.next, %vector.body ]
  %20 = or disjoint i64 %c0, %index
  %21 = getelementptr inbounds nuw i16, ptr %in0, i64 %20
  %wide.load = load <16 x i16>, ptr %21, align 2
  %22 = zext <16 x i16> %wide.load to <16 x i32>
  %23 = shl nuw <16 x i32> %22, splat (i32 16)
  %24 = bitcast <16 x i32> %23 to <16 x float>
  %25 = getelementptr inbounds nuw i16, ptr %in1, i64 %20
  %wide.load8 = load <16 x i16>, ptr %25, align 2
  %26 = zext <16 x i16> %wide.load8 to <16 x i32>
  %27 = shl nuw <16 x i32> %26, splat (i32 16)
  %28 = bitcast <16 x i32> %27 to <16 x float>
  %29 = fadd <16 x float> %24, %28
  %30 = bitcast <16 x float> %29 to <16 x i32>
  %31 = lshr <16 x i32> %30, splat (i32 16)
  %32 = and <16 x i32> %31, splat (i32 1)
  %33 = add <16 x i32> %30, splat (i32 32767)
  %34 = add <16 x i32> %33, %32
  %35 = lshr <16 x i32> %34, splat (i32 16)
  %36 = or <16 x i32> %31, splat (i32 64)
  %37 = fcmp uno <16 x float> %29, zeroinitializer
  %38 = select <16 x i1> %37, <16 x i32> %36, <16 x i32> %35
  %39 = trunc nuw <16 x i32> %38 to <16 x i16>
  %40 = getelementptr i16, ptr %12, i64 %20
  store <16 x i16> %39, ptr %40, align 2
  %index.next = add nuw i64 %index, 16
  %41 = icmp eq i64 %index.next, %n.vec
  br i1 %41, label %middle.block, label %vector.body, !llvm.loop !0

middle.block:                                     ; preds = %vector.body
  %cmp.n = icmp eq i64 %16, %n.vec
  br i1 %cmp.n, label %j.exit, label %vec.epilog.iter.check

vec.epilog.iter.check:                            ; preds = %middle.block
  %ind.end = or disjoint i64 %c0, %n.vec
  %min.epilog.iters.check = icmp eq i64 %n.mod.vf, 0
  br i1 %min.epilog.iters.check, label %j.body.preheader, label %vec.epilog.ph, !prof !3

vec.epilog.ph:                                    ; preds = %vector.main.loop.iter.check, %vec.epilog.iter.check
  %vec.epilog.resume.val = phi i64 [ %n.vec, %vec.epilog.iter.check ], [ 0, %vector.main.loop.iter.check ]
  %n.vec10 = and i64 %16, -4
  %42 = or disjoint i64 %c0, %n.vec10
  br label %vec.epilog.vector.body

vec.epilog.vector.body:                           ; preds = %vec.epilog.vector.body, %vec.epilog.ph
  %index11 = phi i64 [ %vec.epilog.resume.val, %vec.epilog.ph ], [ %index.next14, %vec.epilog.vector.body ]
  %offset.idx = or disjoint i64 %c0, %index11
  %43 = getelementptr inbounds nuw i16, ptr %in0, i64 %offset.idx
  %wide.load12 = load <4 x i16>, ptr %43, align 2
  %44 = zext <4 x i16> %wide.load12 to <4 x i32>
  %45 = shl nuw <4 x i32> %44, splat (i32 16)
  %46 = bitcast <4 x i32> %45 to <4 x float>
  %47 = getelementptr inbounds nuw i16, ptr %in1, i64 %offset.idx
  %wide.load13 = load <4 x i16>, ptr %47, align 2
  %48 = zext <4 x i16> %wide.load13 to <4 x i32>
  %49 = shl nuw <4 x i32> %48, splat (i32 16)
  %50 = bitcast <4 x i32> %49 to <4 x float>
  %51 = fadd <4 x float> %46, %50
  %52 = bitcast <4 x float> %51 to <4 x i32>
  %53 = lshr <4 x i32> %52, splat (i32 16)
  %54 = and <4 x i32> %53, splat (i32 1)
  %55 = add <4 x i32> %52, splat (i32 32767)
  %56 = add <4 x i32> %55, %54
  %57 = lshr <4 x i32> %56, splat (i32 16)
  %58 = or <4 x i32> %53, splat (i32 64)
  %59 = fcmp uno <4 x float> %51, zeroinitializer
  %60 = select <4 x i1> %59, <4 x i32> %58, <4 x i32> %57
  %61 = trunc nuw <4 x i32> %60 to <4 x i16>
  %62 = getelementptr i16, ptr %12, i64 %offset.idx
  store <4 x i16> %61, ptr %62, align 2
  %index.next14 = add nuw i64 %index11, 4
  %63 = icmp eq i64 %index.next14, %n.vec10
  br i1 %63, label %vec.epilog.middle.block, label %vec.epilog.vector.body, !llvm.loop !4

vec.epilog.middle.block:                          ; preds = %vec.epilog.vector.body
  %cmp.n15 = icmp eq i64 %16, %n.vec10
  br i1 %cmp.n15, label %j.exit, label %j.body.preheader

j.body.preheader:                                 ; preds = %vector.memcheck, %iter.check, %vec.epilog.iter.check, %vec.epilog.middle.block
  %j1.ph = phi i64 [ %c0, %iter.check ], [ %c0, %vector.memcheck ], [ %ind.end, %vec.epilog.iter.check ], [ %42, %vec.epilog.middle.block ]
  br label %j.body

row.exit:                                         ; preds = %j.exit, %entry
  ret void

j.body:                                           ; preds = %j.body.preheader, %j.body
  %j1 = phi i64 [ %86, %j.body ], [ %j1.ph, %j.body.preheader ]
  %64 = getelementptr inbounds nuw i16, ptr %in0, i64 %j1
  %65 = load i16, ptr %64, align 2
  %66 = zext i16 %65 to i32
  %67 = shl nuw i32 %66, 16
  %68 = bitcast i32 %67 to float
  %69 = getelementptr inbounds nuw i16, ptr %in1, i64 %j1
  %70 = load i16, ptr %69, align 2
  %71 = zext i16 %70 to i32
  %72 = shl nuw i32 %71, 16
  %73 = bitcast i32 %72 to float
  %74 = fadd float %68, %73
  %75 = bitcast float %74 to i32
  %76 = lshr i32 %75, 16
  %77 = and i32 %76, 1
  %78 = add i32 %75, 32767
  %79 = add i32 %78, %77
  %80 = lshr i32 %79, 16
  %81 = or i32 %76, 64
  %82 = fcmp uno float %74, 0.000000e+00
  %83 = select i1 %82, i32 %81, i32 %80
  %84 = trunc nuw i32 %83 to i16
  %85 = getelementptr i16, ptr %12, i64 %j1
  store i16 %84, ptr %85, align 2
  %86 = add nuw nsw i64 %j1, 1
  %87 = icmp slt i64 %86, %9
  br i1 %87, label %j.body, label %j.exit, !llvm.loop !5

j.exit:                                           ; preds = %j.body, %middle.block, %vec.epilog.middle.block, %row.body
  %88 = add i64 %8, %i2
  %89 = icmp slt i64 %88, %end
  br i1 %89, label %row.body, label %row.exit
}

; Function Attrs: mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smin.i64(i64, i64) #1

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smax.i64(i64, i64) #2

attributes #0 = { nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none) "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
attributes #1 = { mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.isvectorized", i32 1}
!2 = !{!"llvm.loop.unroll.runtime.disable"}
!3 = !{!"branch_weights", i32 4, i32 12}
!4 = distinct !{!4, !1, !2}
!5 = distinct !{!5, !1}
