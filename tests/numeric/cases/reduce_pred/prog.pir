func @main(%q: pred[4,5]) -> (and1: pred[4], and0: pred[5], or1: pred[4], or0: pred[5], max1: pred[4], max0: pred[5], min1: pred[4], min0: pred[5]) {
  %and1 = reduce %q {dims=[1], kind=and} : pred[4]
  %and0 = reduce %q {dims=[0], kind=and} : pred[5]
  %or1 = reduce %q {dims=[1], kind=or} : pred[4]
  %or0 = reduce %q {dims=[0], kind=or} : pred[5]
  %max1 = reduce %q {dims=[1], kind=max} : pred[4]
  %max0 = reduce %q {dims=[0], kind=max} : pred[5]
  %min1 = reduce %q {dims=[1], kind=min} : pred[4]
  %min0 = reduce %q {dims=[0], kind=min} : pred[5]
  return %and1, %and0, %or1, %or0, %max1, %max0, %min1, %min0
}
