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
  br i1 %2, label %row.body, label %row.exit

row.body:                                         ; preds = %entry, %j.exit
  %i2 = phi i64 [ %116, %j.exit ], [ %begin, %entry ]
  %c0 = and i64 %i2, 3
  %3 = sub nuw nsw i64 4, %c0
  %4 = sub i64 %end, %i2
  %5 = tail call i64 @llvm.smin.i64(i64 %3, i64 %4)
  %6 = icmp sgt i64 %4, 0
  br i1 %6, label %j.body.lr.ph, label %j.exit

j.body.lr.ph:                                     ; preds = %row.body
  %7 = and i64 %i2, -4
  %8 = getelementptr i32, ptr %out0, i64 %7
  %9 = getelementptr inbounds nuw i32, ptr %in0, i64 %c0
  %10 = load i32, ptr %9, align 4
  %11 = getelementptr inbounds nuw i32, ptr %in1, i64 %c0
  %12 = load i32, ptr %11, align 4
  %13 = icmp eq i32 %12, 0
  %14 = icmp eq i32 %12, -1
  %15 = add i32 %12, 1
  %16 = icmp ult i32 %15, 2
  %17 = select i1 %16, i32 1, i32 %12
  %18 = sdiv i32 %10, %17
  %19 = sub i32 0, %10
  %20 = select i1 %14, i32 %19, i32 %18
  %21 = select i1 %13, i32 -1, i32 %20
  %22 = getelementptr i32, ptr %8, i64 %c0
  store i32 %21, ptr %22, align 4
  %23 = icmp sgt i64 %5, 1
  br i1 %23, label %j.body.1, label %j.exit

row.exit:                                         ; preds = %j.exit, %entry
  ret void

j.body.1:                                         ; preds = %j.body.lr.ph
  %24 = add nuw nsw i64 %c0, 1
  %25 = getelementptr inbounds nuw i32, ptr %in0, i64 %24
  %26 = load i32, ptr %25, align 4
  %27 = getelementptr inbounds nuw i32, ptr %in1, i64 %24
  %28 = load i32, ptr %27, align 4
  %29 = icmp eq i32 %28, 0
  %30 = icmp eq i32 %28, -1
  %31 = add i32 %28, 1
  %32 = icmp ult i32 %31, 2
  %33 = select i1 %32, i32 1, i32 %28
  %34 = sdiv i32 %26, %33
  %35 = sub i32 0, %26
  %36 = select i1 %30, i32 %35, i32 %34
  %37 = select i1 %29, i32 -1, i32 %36
  %38 = getelementptr i32, ptr %8, i64 %24
  store i32 %37, ptr %38, align 4
  %.not = icmp eq i64 %5, 2
  br i1 %.not, label %j.exit, label %j.body.2

j.body.2:                                         ; preds = %j.body.1
  %39 = add nuw nsw i64 %c0, 2
  %40 = getelementptr inbounds nuw i32, ptr %in0, i64 %39
  %41 = load i32, ptr %40, align 4
  %42 = getelementptr inbounds nuw i32, ptr %in1, i64 %39
  %43 = load i32, ptr %42, align 4
  %44 = icmp eq i32 %43, 0
  %45 = icmp eq i32 %43, -1
  %46 = add i32 %43, 1
  %47 = icmp ult i32 %46, 2
  %48 = select i1 %47, i32 1, i32 %43
  %49 = sdiv i32 %41, %48
  %50 = sub i32 0, %41
  %51 = select i1 %45, i32 %50, i32 %49
  %52 = select i1 %44, i32 -1, i32 %51
  %53 = getelementptr i32, ptr %8, i64 %39
  store i32 %52, ptr %53, align 4
  %54 = icmp sgt i64 %5, 3
  br i1 %54, label %j.body.3, label %j.exit

j.body.3:                                         ; preds = %j.body.2
  %55 = add nuw nsw i64 %c0, 3
  %56 = getelementptr inbounds nuw i32, ptr %in0, i64 %55
  %57 = load i32, ptr %56, align 4
  %58 = getelementptr inbounds nuw i32, ptr %in1, i64 %55
  %59 = load i32, ptr %58, align 4
  %60 = icmp eq i32 %59, 0
  %61 = icmp eq i32 %59, -1
  %62 = add i32 %59, 1
  %63 = icmp ult i32 %62, 2
  %64 = select i1 %63, i32 1, i32 %59
  %65 = sdiv i32 %57, %64
  %66 = sub i32 0, %57
  %67 = select i1 %61, i32 %66, i32 %65
  %68 = select i1 %60, i32 -1, i32 %67
  %69 = getelementptr i32, ptr %8, i64 %55
  store i32 %68, ptr %69, align 4
  %.not3 = icmp eq i64 %5, 4
  br i1 %.not3, label %j.exit, label %j.body.4

j.body.4:                                         ; preds = %j.body.3
  %70 = or disjoint i64 %c0, 4
  %71 = getelementptr inbounds nuw i32, ptr %in0, i64 %70
  %72 = load i32, ptr %71, align 4
  %73 = getelementptr inbounds nuw i32, ptr %in1, i64 %70
  %74 = load i32, ptr %73, align 4
  %75 = icmp eq i32 %74, 0
  %76 = icmp eq i32 %74, -1
  %77 = add i32 %74, 1
  %78 = icmp ult i32 %77, 2
  %79 = select i1 %78, i32 1, i32 %74
  %80 = sdiv i32 %72, %79
  %81 = sub i32 0, %72
  %82 = select i1 %76, i32 %81, i32 %80
  %83 = select i1 %75, i32 -1, i32 %82
  %84 = getelementptr i32, ptr %8, i64 %70
  store i32 %83, ptr %84, align 4
  %85 = icmp sgt i64 %5, 5
  br i1 %85, label %j.body.5, label %j.exit

j.body.5:                                         ; preds = %j.body.4
  %86 = add nuw nsw i64 %c0, 5
  %87 = getelementptr inbounds nuw i32, ptr %in0, i64 %86
  %88 = load i32, ptr %87, align 4
  %89 = getelementptr inbounds nuw i32, ptr %in1, i64 %86
  %90 = load i32, ptr %89, align 4
  %91 = icmp eq i32 %90, 0
  %92 = icmp eq i32 %90, -1
  %93 = add i32 %90, 1
  %94 = icmp ult i32 %93, 2
  %95 = select i1 %94, i32 1, i32 %90
  %96 = sdiv i32 %88, %95
  %97 = sub i32 0, %88
  %98 = select i1 %92, i32 %97, i32 %96
  %99 = select i1 %91, i32 -1, i32 %98
  %100 = getelementptr i32, ptr %8, i64 %86
  store i32 %99, ptr %100, align 4
  %.not4 = icmp eq i64 %5, 6
  br i1 %.not4, label %j.exit, label %j.body.6

j.body.6:                                         ; preds = %j.body.5
  %101 = add nuw nsw i64 %c0, 6
  %102 = getelementptr inbounds nuw i32, ptr %in0, i64 %101
  %103 = load i32, ptr %102, align 4
  %104 = getelementptr inbounds nuw i32, ptr %in1, i64 %101
  %105 = load i32, ptr %104, align 4
  %106 = icmp eq i32 %105, 0
  %107 = icmp eq i32 %105, -1
  %108 = add i32 %105, 1
  %109 = icmp ult i32 %108, 2
  %110 = select i1 %109, i32 1, i32 %105
  %111 = sdiv i32 %103, %110
  %112 = sub i32 0, %103
  %113 = select i1 %107, i32 %112, i32 %111
  %114 = select i1 %106, i32 -1, i32 %113
  %115 = getelementptr i32, ptr %8, i64 %101
  store i32 %114, ptr %115, align 4
  br label %j.exit

j.exit:                                           ; preds = %j.body.lr.ph, %j.body.1, %j.body.2, %j.body.3, %j.body.4, %j.body.5, %j.body.6, %row.body
  %116 = add i64 %5, %i2
  %117 = icmp slt i64 %116, %end
  br i1 %117, label %row.body, label %row.exit
}

; Function Attrs: mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smin.i64(i64, i64) #1

attributes #0 = { nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none) "no-trapping-math"="true" "target-cpu"="x86-64-v3" }
attributes #1 = { mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
