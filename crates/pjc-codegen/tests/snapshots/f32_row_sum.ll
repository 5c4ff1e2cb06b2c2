; ModuleID = 'main'
source_filename = "main"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none)
define void @k0_s(ptr noalias readonly captures(none) %bufs, i64 %begin, i64 %end) local_unnamed_addr #0 {
entry:
  %in0 = load ptr, ptr %bufs, align 8
  %0 = getelementptr inbounds nuw i8, ptr %bufs, i64 8
  %out0 = load ptr, ptr %0, align 8
  %1 = icmp slt i64 %begin, %end
  br i1 %1, label %r0.head.preheader.preheader, label %o.exit

r0.head.preheader.preheader:                      ; preds = %entry
  %2 = sub i64 %end, %begin
  %min.iters.check = icmp ult i64 %2, 48
  br i1 %min.iters.check, label %r0.head.preheader.preheader25, label %vector.scevcheck

vector.scevcheck:                                 ; preds = %r0.head.preheader.preheader
  %3 = xor i64 %begin, -1
  %4 = add i64 %end, %3
  %5 = mul i64 %begin, 20
  %scevgep = getelementptr i8, ptr %in0, i64 %5
  %mul = tail call { i64, i1 } @llvm.umul.with.overflow.i64(i64 %4, i64 20)
  %mul.result = extractvalue { i64, i1 } %mul, 0
  %mul.overflow = extractvalue { i64, i1 } %mul, 1
  %6 = getelementptr i8, ptr %scevgep, i64 %mul.result
  %7 = icmp ult ptr %6, %scevgep
  %8 = or i1 %7, %mul.overflow
  %9 = getelementptr i8, ptr %in0, i64 %5
  %scevgep5 = getelementptr i8, ptr %9, i64 4
  %mul6 = tail call { i64, i1 } @llvm.umul.with.overflow.i64(i64 %4, i64 20)
  %mul.result7 = extractvalue { i64, i1 } %mul6, 0
  %mul.overflow8 = extractvalue { i64, i1 } %mul6, 1
  %10 = getelementptr i8, ptr %scevgep5, i64 %mul.result7
  %11 = icmp ult ptr %10, %scevgep5
  %12 = or i1 %11, %mul.overflow8
  %13 = getelementptr i8, ptr %in0, i64 %5
  %scevgep9 = getelementptr i8, ptr %13, i64 8
  %mul10 = tail call { i64, i1 } @llvm.umul.with.overflow.i64(i64 %4, i64 20)
  %mul.result11 = extractvalue { i64, i1 } %mul10, 0
  %mul.overflow12 = extractvalue { i64, i1 } %mul10, 1
  %14 = getelementptr i8, ptr %scevgep9, i64 %mul.result11
  %15 = icmp ult ptr %14, %scevgep9
  %16 = or i1 %15, %mul.overflow12
  %17 = getelementptr i8, ptr %in0, i64 %5
  %scevgep13 = getelementptr i8, ptr %17, i64 12
  %mul14 = tail call { i64, i1 } @llvm.umul.with.overflow.i64(i64 %4, i64 20)
  %mul.result15 = extractvalue { i64, i1 } %mul14, 0
  %mul.overflow16 = extractvalue { i64, i1 } %mul14, 1
  %18 = getelementptr i8, ptr %scevgep13, i64 %mul.result15
  %19 = icmp ult ptr %18, %scevgep13
  %20 = or i1 %19, %mul.overflow16
  %21 = getelementptr i8, ptr %in0, i64 %5
  %scevgep17 = getelementptr i8, ptr %21, i64 16
  %mul18 = tail call { i64, i1 } @llvm.umul.with.overflow.i64(i64 %4, i64 20)
  %mul.result19 = extractvalue { i64, i1 } %mul18, 0
  %mul.overflow20 = extractvalue { i64, i1 } %mul18, 1
  %22 = getelementptr i8, ptr %scevgep17, i64 %mul.result19
  %23 = icmp ult ptr %22, %scevgep17
  %24 = or i1 %23, %mul.overflow20
  %25 = or i1 %8, %12
  %26 = or i1 %25, %16
  %27 = or i1 %26, %20
  %28 = or i1 %27, %24
  br i1 %28, label %r0.head.preheader.preheader25, label %vector.memcheck

vector.memcheck:                                  ; preds = %vector.scevcheck
  %29 = shl i64 %begin, 2
  %scevgep21 = getelementptr i8, ptr %out0, i64 %29
  %30 = shl i64 %end, 2
  %scevgep22 = getelementptr i8, ptr %out0, i64 %30
  %31 = mul i64 %begin, 20
  %scevgep23 = getelementptr i8, ptr %in0, i64 %31
  %32 = mul i64 %end, 20
  %scevgep24 = getelementptr i8, ptr %in0, i64 %32
  %bound0 = icmp ult ptr %scevgep21, %scevgep24
  %bound1 = icmp ult ptr %scevgep23, %scevgep22
  %found.conflict = and i1 %bound0, %bound1
  br i1 %found.conflict, label %r0.head.preheader.preheader25, label %vector.ph

vector.ph:                                        ; preds = %vector.memcheck
  %n.vec = and i64 %2, -8
  %33 = add i64 %begin, %n.vec
  br label %vector.body

vector.body:                                      ; preds = %vector.body, %vector.ph
  %index = phi i64 [ 0, %vector.ph ], [ %index.next, %vector.body ]
  %offset.idx = add i64 %begin, %index
  %34 = mul i64 %offset.idx, 20
  %35 = mul i64 %offset.idx, 20
  %36 = mul i64 %offset.idx, 20
  %37 = mul i64 %offset.idx, 20
  %38 = mul i64 %offset.idx, 20
  %39 = mul i64 %offset.idx, 20
  %40 = mul i64 %offset.idx, 20
  %41 = mul i64 %offset.idx, 20
  %42 = getelementptr i8, ptr %in0, i64 %34
  %43 = getelementptr i8, ptr %in0, i64 %35
  %44 = getelementptr i8, ptr %43, i64 20
  %45 = getelementptr i8, ptr %in0, i64 %36
  %46 = getelementptr i8, ptr %45, i64 40
  %47 = getelementptr i8, ptr %in0, i64 %37
  %48 = getelementptr i8, ptr %47, i64 60
  %49 = getelementptr i8, ptr %in0, i64 %38
  %50 = getelementptr i8, ptr %49, i64 80
  %51 = getelementptr i8, ptr %in0, i64 %39
  %52 = getelementptr i8, ptr %51, i64 100
  %53 = getelementptr i8, ptr %in0, i64 %40
  %54 = getelementptr i8, ptr %53, i64 120
  %55 = getelementptr i8, ptr %in0, i64 %41
  %56 = getelementptr i8, ptr %55, i64 140
  %57 = load float, ptr %42, align 4, !alias.scope !0
  %58 = load float, ptr %44, align 4, !alias.scope !0
  %59 = load float, ptr %46, align 4, !alias.scope !0
  %60 = load float, ptr %48, align 4, !alias.scope !0
  %61 = load float, ptr %50, align 4, !alias.scope !0
  %62 = load float, ptr %52, align 4, !alias.scope !0
  %63 = load float, ptr %54, align 4, !alias.scope !0
  %64 = load float, ptr %56, align 4, !alias.scope !0
  %65 = insertelement <8 x float> poison, float %57, i64 0
  %66 = insertelement <8 x float> %65, float %58, i64 1
  %67 = insertelement <8 x float> %66, float %59, i64 2
  %68 = insertelement <8 x float> %67, float %60, i64 3
  %69 = insertelement <8 x float> %68, float %61, i64 4
  %70 = insertelement <8 x float> %69, float %62, i64 5
  %71 = insertelement <8 x float> %70, float %63, i64 6
  %72 = insertelement <8 x float> %71, float %64, i64 7
  %73 = fadd reassoc <8 x float> %72, zeroinitializer
  %74 = getelementptr i8, ptr %42, i64 4
  %75 = getelementptr i8, ptr %43, i64 24
  %76 = getelementptr i8, ptr %45, i64 44
  %77 = getelementptr i8, ptr %47, i64 64
  %78 = getelementptr i8, ptr %49, i64 84
  %79 = getelementptr i8, ptr %51, i64 104
  %80 = getelementptr i8, ptr %53, i64 124
  %81 = getelementptr i8, ptr %55, i64 144
  %82 = load float, ptr %74, align 4, !alias.scope !0
  %83 = load float, ptr %75, align 4, !alias.scope !0
  %84 = load float, ptr %76, align 4, !alias.scope !0
  %85 = load float, ptr %77, align 4, !alias.scope !0
  %86 = load float, ptr %78, align 4, !alias.scope !0
  %87 = load float, ptr %79, align 4, !alias.scope !0
  %88 = load float, ptr %80, align 4, !alias.scope !0
  %89 = load float, ptr %81, align 4, !alias.scope !0
  %90 = insertelement <8 x float> poison, float %82, i64 0
  %91 = insertelement <8 x float> %90, float %83, i64 1
  %92 = insertelement <8 x float> %91, float %84, i64 2
  %93 = insertelement <8 x float> %92, float %85, i64 3
  %94 = insertelement <8 x float> %93, float %86, i64 4
  %95 = insertelement <8 x float> %94, float %87, i64 5
  %96 = insertelement <8 x float> %95, float %88, i64 6
  %97 = insertelement <8 x float> %96, float %89, i64 7
  %98 = fadd reassoc <8 x float> %73, %97
  %99 = getelementptr i8, ptr %42, i64 8
  %100 = getelementptr i8, ptr %43, i64 28
  %101 = getelementptr i8, ptr %45, i64 48
  %102 = getelementptr i8, ptr %47, i64 68
  %103 = getelementptr i8, ptr %49, i64 88
  %104 = getelementptr i8, ptr %51, i64 108
  %105 = getelementptr i8, ptr %53, i64 128
  %106 = getelementptr i8, ptr %55, i64 148
  %107 = load float, ptr %99, align 4, !alias.scope !0
  %108 = load float, ptr %100, align 4, !alias.scope !0
  %109 = load float, ptr %101, align 4, !alias.scope !0
  %110 = load float, ptr %102, align 4, !alias.scope !0
  %111 = load float, ptr %103, align 4, !alias.scope !0
  %112 = load float, ptr %104, align 4, !alias.scope !0
  %113 = load float, ptr %105, align 4, !alias.scope !0
  %114 = load float, ptr %106, align 4, !alias.scope !0
  %115 = insertelement <8 x float> poison, float %107, i64 0
  %116 = insertelement <8 x float> %115, float %108, i64 1
  %117 = insertelement <8 x float> %116, float %109, i64 2
  %118 = insertelement <8 x float> %117, float %110, i64 3
  %119 = insertelement <8 x float> %118, float %111, i64 4
  %120 = insertelement <8 x float> %119, float %112, i64 5
  %121 = insertelement <8 x float> %120, float %113, i64 6
  %122 = insertelement <8 x float> %121, float %114, i64 7
  %123 = fadd reassoc <8 x float> %98, %122
  %124 = getelementptr i8, ptr %42, i64 12
  %125 = getelementptr i8, ptr %43, i64 32
  %126 = getelementptr i8, ptr %45, i64 52
  %127 = getelementptr i8, ptr %47, i64 72
  %128 = getelementptr i8, ptr %49, i64 92
  %129 = getelementptr i8, ptr %51, i64 112
  %130 = getelementptr i8, ptr %53, i64 132
  %131 = getelementptr i8, ptr %55, i64 152
  %132 = load float, ptr %124, align 4, !alias.scope !0
  %133 = load float, ptr %125, align 4, !alias.scope !0
  %134 = load float, ptr %126, align 4, !alias.scope !0
  %135 = load float, ptr %127, align 4, !alias.scope !0
  %136 = load float, ptr %128, align 4, !alias.scope !0
  %137 = load float, ptr %129, align 4, !alias.scope !0
  %138 = load float, ptr %130, align 4, !alias.scope !0
  %139 = load float, ptr %131, align 4, !alias.scope !0
  %140 = insertelement <8 x float> poison, float %132, i64 0
  %141 = insertelement <8 x float> %140, float %133, i64 1
  %142 = insertelement <8 x float> %141, float %134, i64 2
  %143 = insertelement <8 x float> %142, float %135, i64 3
  %144 = insertelement <8 x float> %143, float %136, i64 4
  %145 = insertelement <8 x float> %144, float %137, i64 5
  %146 = insertelement <8 x float> %145, float %138, i64 6
  %147 = insertelement <8 x float> %146, float %139, i64 7
  %148 = fadd reassoc <8 x float> %123, %147
  %149 = getelementptr i8, ptr %42, i64 16
  %150 = getelementptr i8, ptr %43, i64 36
  %151 = getelementptr i8, ptr %45, i64 56
  %152 = getelementptr i8, ptr %47, i64 76
  %153 = getelementptr i8, ptr %49, i64 96
  %154 = getelementptr i8, ptr %51, i64 116
  %155 = getelementptr i8, ptr %53, i64 136
  %156 = getelementptr i8, ptr %55, i64 156
  %157 = load float, ptr %149, align 4, !alias.scope !0
  %158 = load float, ptr %150, align 4, !alias.scope !0
  %159 = load float, ptr %151, align 4, !alias.scope !0
  %160 = load float, ptr %152, align 4, !alias.scope !0
  %161 = load float, ptr %153, align 4, !alias.scope !0
  %162 = load float, ptr %154, align 4, !alias.scope !0
  %163 = load float, ptr %155, align 4, !alias.scope !0
  %164 = load float, ptr %156, align 4, !alias.scope !0
  %165 = insertelement <8 x float> poison, float %157, i64 0
  %166 = insertelement <8 x float> %165, float %158, i64 1
  %167 = insertelement <8 x float> %166, float %159, i64 2
  %168 = insertelement <8 x float> %167, float %160, i64 3
  %169 = insertelement <8 x float> %168, float %161, i64 4
  %170 = insertelement <8 x float> %169, float %162, i64 5
  %171 = insertelement <8 x float> %170, float %163, i64 6
  %172 = insertelement <8 x float> %171, float %164, i64 7
  %173 = fadd reassoc <8 x float> %148, %172
  %174 = getelementptr inbounds float, ptr %out0, i64 %offset.idx
  store <8 x float> %173, ptr %174, align 4, !alias.scope !3, !noalias !0
  %index.next = add nuw i64 %index, 8
  %175 = icmp eq i64 %index.next, %n.vec
  br i1 %175, label %middle.block, label %vector.body, !llvm.loop !5

middle.block:                                     ; preds = %vector.body
  %cmp.n = icmp eq i64 %2, %n.vec
  br i1 %cmp.n, label %o.exit, label %r0.head.preheader.preheader25

r0.head.preheader.preheader25:                    ; preds = %vector.memcheck, %vector.scevcheck, %r0.head.preheader.preheader, %middle.block
  %o4.ph = phi i64 [ %begin, %vector.memcheck ], [ %begin, %vector.scevcheck ], [ %begin, %r0.head.preheader.preheader ], [ %33, %middle.block ]
  %176 = sub i64 %end, %o4.ph
  %.neg = add i64 %o4.ph, 1
  %xtraiter = and i64 %176, 1
  %lcmp.mod.not = icmp eq i64 %xtraiter, 0
  br i1 %lcmp.mod.not, label %r0.head.preheader.prol.loopexit, label %r0.head.preheader.prol

r0.head.preheader.prol:                           ; preds = %r0.head.preheader.preheader25
  %.idx.prol = mul i64 %o4.ph, 20
  %177 = getelementptr i8, ptr %in0, i64 %.idx.prol
  %178 = load float, ptr %177, align 4
  %179 = fadd reassoc float %178, 0.000000e+00
  %180 = getelementptr i8, ptr %177, i64 4
  %181 = load float, ptr %180, align 4
  %182 = fadd reassoc float %179, %181
  %183 = getelementptr i8, ptr %177, i64 8
  %184 = load float, ptr %183, align 4
  %185 = fadd reassoc float %182, %184
  %186 = getelementptr i8, ptr %177, i64 12
  %187 = load float, ptr %186, align 4
  %188 = fadd reassoc float %185, %187
  %189 = getelementptr i8, ptr %177, i64 16
  %190 = load float, ptr %189, align 4
  %191 = fadd reassoc float %188, %190
  %192 = getelementptr inbounds float, ptr %out0, i64 %o4.ph
  store float %191, ptr %192, align 4
  %193 = add nsw i64 %o4.ph, 1
  br label %r0.head.preheader.prol.loopexit

r0.head.preheader.prol.loopexit:                  ; preds = %r0.head.preheader.prol, %r0.head.preheader.preheader25
  %o4.unr = phi i64 [ %o4.ph, %r0.head.preheader.preheader25 ], [ %193, %r0.head.preheader.prol ]
  %194 = icmp eq i64 %end, %.neg
  br i1 %194, label %o.exit, label %r0.head.preheader

r0.head.preheader:                                ; preds = %r0.head.preheader.prol.loopexit, %r0.head.preheader
  %o4 = phi i64 [ %228, %r0.head.preheader ], [ %o4.unr, %r0.head.preheader.prol.loopexit ]
  %.idx = mul i64 %o4, 20
  %195 = getelementptr i8, ptr %in0, i64 %.idx
  %196 = load float, ptr %195, align 4
  %197 = fadd reassoc float %196, 0.000000e+00
  %198 = getelementptr i8, ptr %195, i64 4
  %199 = load float, ptr %198, align 4
  %200 = fadd reassoc float %197, %199
  %201 = getelementptr i8, ptr %195, i64 8
  %202 = load float, ptr %201, align 4
  %203 = fadd reassoc float %200, %202
  %204 = getelementptr i8, ptr %195, i64 12
  %205 = load float, ptr %204, align 4
  %206 = fadd reassoc float %203, %205
  %207 = getelementptr i8, ptr %195, i64 16
  %208 = load float, ptr %207, align 4
  %209 = fadd reassoc float %206, %208
  %210 = getelementptr inbounds float, ptr %out0, i64 %o4
  store float %209, ptr %210, align 4
  %211 = add nsw i64 %o4, 1
  %.idx.1 = mul i64 %211, 20
  %212 = getelementptr i8, ptr %in0, i64 %.idx.1
  %213 = load float, ptr %212, align 4
  %214 = fadd reassoc float %213, 0.000000e+00
  %215 = getelementptr i8, ptr %212, i64 4
  %216 = load float, ptr %215, align 4
  %217 = fadd reassoc float %214, %216
  %218 = getelementptr i8, ptr %212, i64 8
  %219 = load float, ptr %218, align 4
  %220 = fadd reassoc float %217, %219
  %221 = getelementptr i8, ptr %212, i64 12
  %222 = load float, ptr %221, align 4
  %223 = fadd reassoc float %220, %222
  %224 = getelementptr i8, ptr %212, i64 16
  %225 = load float, ptr %224, align 4
  %226 = fadd reassoc float %223, %225
  %227 = getelementptr inbounds float, ptr %out0, i64 %211
  store float %226, ptr %227, align 4
  %228 = add nsw i64 %o4, 2
  %exitcond.not.1 = icmp eq i64 %228, %end
  br i1 %exitcond.not.1, label %o.exit, label %r0.head.preheader, !llvm.loop !8

o.exit:                                           ; preds = %r0.head.preheader.prol.loopexit, %r0.head.preheader, %middle.block, %entry
  ret void
}

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare { i64, i1 } @llvm.umul.with.overflow.i64(i64, i64) #1

attributes #0 = { nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none) "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
attributes #1 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }

!0 = !{!1}
!1 = distinct !{!1, !2}
!2 = distinct !{!2, !"LVerDomain"}
!3 = !{!4}
!4 = distinct !{!4, !2}
!5 = distinct !{!5, !6, !7}
!6 = !{!"llvm.loop.isvectorized", i32 1}
!7 = !{!"llvm.loop.unroll.runtime.disable"}
!8 = distinct !{!8, !6}
